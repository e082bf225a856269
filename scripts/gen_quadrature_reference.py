#!/usr/bin/env python3
"""Reference data for tests/math/test_math_quadrature.cpp (mpmath, 50 digits).

tests/data/gauss_legendre_reference.csv: n, i, node, weight (nodes ascending)
  from Newton iteration on mpmath's legendre() at 50 digits, n in NS.
tests/data/log_product_reference.csv: a, b, x0, n, func, value with
  value = Integral_a^b f(x) ln|x - x0| dx:
  - f = x^p (p < n): closed form at 200 digits, Sum_j C(p,j) x0^(p-j) [F_j(b - x0) - F_j(a - x0)],
    F_j(u) = u^(j+1) (ln|u|/(j+1) - 1/(j+1)^2);
  - f = cos, exp: mpmath tanh-sinh quadrature split at x0 (independent of the above).
"""
import os
import mpmath as mp

mp.mp.dps = 50
NS = [1, 2, 3, 4, 7, 16, 33, 64, 128]
HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, "..", "tests", "data"))


def gl(n):
    xs = []
    for k in range(1, n + 1):
        x = mp.cos(mp.pi * (k - mp.mpf(1) / 4) / (n + mp.mpf(1) / 2))
        for _ in range(100):
            p, pm = mp.legendre(n, x), mp.legendre(n - 1, x)
            dp = n * (x * p - pm) / (x * x - 1)
            dx = p / dp
            x -= dx
            if abs(dx) < mp.mpf(10) ** (-45):
                break
        p, pm = mp.legendre(n, x), mp.legendre(n - 1, x)
        dp = n * (x * p - pm) / (x * x - 1)
        xs.append((x, 2 / ((1 - x * x) * dp * dp)))
    return sorted(xs)


def mono_log(p, a, b, x0):
    # The binomial expansion cancels badly when x0 is far away (terms ~ |x0|^(p+1)):
    # 200 digits leave more than 100 after the cancellation for every case here.
    with mp.workdps(200):
        return +_mono_log(p, mp.mpf(a), mp.mpf(b), mp.mpf(x0))


def _mono_log(p, a, b, x0):
    def F(j, u):
        if u == 0:
            return mp.mpf(0)
        return u ** (j + 1) * (mp.log(abs(u)) / (j + 1) - mp.mpf(1) / (j + 1) ** 2)
    return mp.fsum(mp.binomial(p, j) * x0 ** (p - j) * (F(j, b - x0) - F(j, a - x0)) for j in range(p + 1))


def quad_log(f, a, b, x0):
    pts = [a, x0, b] if a < x0 < b else [a, b]
    return mp.quad(lambda x: f(x) * mp.log(abs(x - x0)), pts)


def main():
    with open(os.path.join(DATA, "gauss_legendre_reference.csv"), "w") as fh:
        fh.write("n,i,node,weight\n")
        for n in NS:
            for i, (x, w) in enumerate(gl(n)):
                fh.write("%d,%d,%s,%s\n" % (n, i, mp.nstr(x, 30, min_fixed=1, max_fixed=0),
                                           mp.nstr(w, 30, min_fixed=1, max_fixed=0)))
    cells = [("-1", "1"), ("0.3", "1.1"), ("2", "5"), ("-3.5", "-3.25")]
    # x0 = a + s (b - a): inside, midpoint, endpoints, just outside, far outside.
    positions = ["0.5", "0.137", "0", "1", "1.000001", "-0.001", "1.5", "11", "-1000"]
    rows = 0
    with open(os.path.join(DATA, "log_product_reference.csv"), "w") as fh:
        fh.write("a,b,x0,n,func,value\n")
        for sa, sb in cells:
            a, b = float(sa), float(sb)
            for s in positions:
                # x0 rounded to double first: the test passes exactly this double.
                x0 = float(mp.mpf(a) + mp.mpf(s) * (mp.mpf(b) - mp.mpf(a)))
                ma, mb, mx = mp.mpf(a), mp.mpf(b), mp.mpf(x0)
                for n in (8, 16):
                    for p in range(n):
                        fh.write("%r,%r,%r,%d,x^%d,%s\n" % (a, b, x0, n, p, mp.nstr(mono_log(p, ma, mb, mx), 30)))
                        rows += 1
                # Cross-check of the closed form by quadrature for one monomial.
                chk = quad_log(lambda x: x ** 7, ma, mb, mx)
                assert abs(chk - mono_log(7, ma, mb, mx)) < mp.mpf(10) ** -25 * (1 + abs(chk))
                for name, f in (("cos", mp.cos), ("exp", mp.exp)):
                    fh.write("%r,%r,%r,%d,%s,%s\n" % (a, b, x0, 24, name, mp.nstr(quad_log(f, ma, mb, mx), 30)))
                    rows += 1
    print("wrote", DATA, rows, "log-product rows")


if __name__ == "__main__":
    main()
