#!/usr/bin/env python3
"""Writes tests/data/bessel_reference.csv: J0, J1, Y0, Y1 from mpmath at 40 digits
(printed to 30) for the test points of tests/math/test_math_bessel.cpp.

Columns: x, float_exact (1 when x is exactly representable in float, so the float
functions can be checked at the same argument), j0, j1, y0, y1. Every x is an
exact double printed with 17 significant digits.
Points: 2000 log-spaced over [1e-8, 1e4]; 1500 uniform over (0, 30]; points
straddling the split x = 8; for every zero of J0, J1, Y0, Y1 below 50 the zero
rounded to double and to float plus neighbours at relative offsets +-1e-12,
+-1e-8, +-1e-4, +-1e-2.
"""
import os
import struct
import mpmath as mp

mp.mp.dps = 40


def to_float(x):
    return struct.unpack("f", struct.pack("f", float(x)))[0]


def main():
    xs = set()
    for i in range(2000):  # log-spaced, rounded to float so float tests can use them
        xs.add(to_float(10 ** (-8 + 12 * i / 1999)))
    for i in range(1, 1501):
        xs.add(to_float(30 * i / 1500))
    for d in (0.0, 1e-15, 1e-12, 1e-7, 1e-3):
        xs.add(8.0 - d)
        xs.add(8.0 + d)
    xs.update([1e-8, 1e4, 9999.5, 5000.25, 1234.5678, 100.0, 30.0])
    zeros = []
    for n, fz in ((0, mp.besseljzero), (1, mp.besseljzero), (0, mp.besselyzero), (1, mp.besselyzero)):
        k = 1
        while True:
            z = fz(n, k)
            if z > 50:
                break
            zeros.append(z)
            k += 1
    for z in zeros:
        xs.add(float(z))
        xs.add(to_float(z))
        for r in (1e-12, 1e-8, 1e-4, 1e-2):
            xs.add(float(z * (1 + r)))
            xs.add(float(z * (1 - r)))
    xs = sorted(x for x in xs if x > 0)
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.normpath(os.path.join(here, "..", "tests", "data", "bessel_reference.csv"))
    with open(path, "w") as fh:
        fh.write("x,float_exact,j0,j1,y0,y1\n")
        for x in xs:
            mx = mp.mpf(x)
            vals = [mp.besselj(0, mx), mp.besselj(1, mx), mp.bessely(0, mx), mp.bessely(1, mx)]
            fe = 1 if to_float(x) == x else 0
            fh.write("%.17g,%d,%s\n" % (x, fe, ",".join(mp.nstr(v, 30, min_fixed=1, max_fixed=0) for v in vals)))
    print("wrote", path, len(xs), "points,", len(zeros), "zeros")


if __name__ == "__main__":
    main()
