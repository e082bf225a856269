#!/usr/bin/env python3
"""Generates include/emgpu/math/detail/hankel_far_coefficients.hpp.

Short polynomials for H0^(2)(x) = J0(x) - j Y0(x) at large argument x > XF, used
by math::hankel2_0_far (the matrix-fill path; x <= XF keeps the general
Chebyshev pieces of bessel_coefficients.hpp). With Hankel's P/Q form

    J0 = sqrt(2/(pi x)) (P cos(x - pi/4) - Q sin(x - pi/4)),
    Y0 = sqrt(2/(pi x)) (P sin(x - pi/4) + Q cos(x - pi/4)),

P(x) and x Q(x) are smooth functions of y = (XF/x)^2 in (0, 1]. They are
interpolated at 64 Chebyshev nodes in y (mpmath, 50 digits), the Chebyshev
series truncated where the dropped terms are below 4e-18 of the value (P) or
below 4e-18 XF (x Q, which enters divided by x >= XF), and converted to
monomials in y so that the device evaluates them by Horner's rule: one FMA per
term and no division (the Clenshaw form of the general pieces costs two
operations per term and needs t = 128/x^2 - 1, a division).

The script checks the double-rounded Horner polynomials against mpmath on 4000
points x in (XF, 1e7] and prints the worst errors (see the header comment).

It also emits the pieces of math::detail::sincos_fill (an own sin/cos for
the fill): pi/2 split into two 33-bit parts and a rest (Cody-Waite: n P1 and
n P2 are exact for |n| < 2^20), and polynomials S(u), C(u), u = r^2, with
sin r = r + r^3 S(u), cos r = 1 - u/2 + u^2 C(u) for |r| <= pi/4 + 0.01
(Chebyshev interpolation in u, 6 terms each: truncation error 1.2e-17 and 6e-19
absolute, below half an ulp of the results).
Usage: python3 scripts/gen_hankel_far_coefficients.py
"""
import os
import mpmath as mp
import numpy as np

mp.mp.dps = 50
N = 64
XF = 32  # threshold: few terms here, and nearly every far-pass entry has k R > 32


def pq(x):
    ph = x - mp.pi / 4
    j, y = mp.besselj(0, x), mp.bessely(0, x)
    s = mp.sqrt(mp.pi * x / 2)
    return s * (j * mp.cos(ph) + y * mp.sin(ph)), x * s * (y * mp.cos(ph) - j * mp.sin(ph))


def cheb_in_y(idx):
    """Chebyshev coefficients of piece idx (0: P, 1: x Q) in t = 2 y - 1."""
    nodes = [mp.cos(mp.pi * (j + mp.mpf(1) / 2) / N) for j in range(N)]
    fv = [pq(XF / mp.sqrt((t + 1) / 2))[idx] for t in nodes]
    c = [2 * mp.fsum(fv[j] * mp.cos(mp.pi * k * (j + mp.mpf(1) / 2) / N) for j in range(N)) / N
         for k in range(N)]
    c[0] /= 2
    return c


def to_monomials_in_y(c):
    """Sum_k c_k T_k(2 y - 1) as Sum_k m_k y^k (exact rational arithmetic in mpmath)."""
    n = len(c)
    # T_k(t) as coefficient lists in t, then substitute t = 2 y - 1.
    tk = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]
    for k in range(2, n):
        a = [mp.mpf(0)] + [2 * v for v in tk[k - 1]]
        b = tk[k - 2] + [mp.mpf(0)] * (len(a) - len(tk[k - 2]))
        tk.append([a[i] - b[i] for i in range(len(a))])
    mono_t = [mp.mpf(0)] * n
    for k in range(n):
        for i, v in enumerate(tk[k]):
            mono_t[i] += c[k] * v
    # (2y - 1)^i expanded
    m = [mp.mpf(0)] * n
    for i in range(n):
        for j in range(i + 1):
            m[j] += mono_t[i] * mp.binomial(i, j) * mp.mpf(2) ** j * (-1) ** (i - j)
    return m


def truncate(c, tol):
    n = len(c)
    while n > 1 and abs(c[n - 1]) < tol:
        n -= 1
    return c[:n]


def horner(m, y):
    r = np.float64(m[-1])
    for v in reversed(m[:-1]):
        r = r * y + np.float64(v)  # numpy: one rounding per op (an FMA would round once)
    return r


def round_bits(v, bits):
    e = mp.floor(mp.log(abs(v), 2))
    scale = mp.mpf(2) ** (bits - 1 - e)
    return mp.nint(v * scale) / scale


def trig_pieces():
    half_pi = mp.pi / 2
    p1 = round_bits(half_pi, 33)
    p2 = round_bits(half_pi - p1, 33)
    p3 = mp.mpf(float(half_pi - p1 - p2))
    assert mp.mpf(float(p1)) == p1 and mp.mpf(float(p2)) == p2
    rmax = mp.pi / 4 + mp.mpf("0.01")
    umax = rmax * rmax
    n = 40

    def fit(f, nterms):
        nodes = [umax * (1 + mp.cos(mp.pi * (j + mp.mpf(1) / 2) / n)) / 2 for j in range(n)]
        fv = [f(u) for u in nodes]
        c = [2 * mp.fsum(fv[j] * mp.cos(mp.pi * k * (j + mp.mpf(1) / 2) / n) for j in range(n)) / n
             for k in range(n)]
        c[0] /= 2
        tail = max(abs(v) for v in c[nterms:])
        c = c[:nterms]
        tk = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]
        for k in range(2, nterms):
            a = [mp.mpf(0)] + [2 * v for v in tk[k - 1]]
            b = tk[k - 2] + [mp.mpf(0)] * (len(a) - len(tk[k - 2]))
            tk.append([a[i] - b[i] for i in range(len(a))])
        mt = [mp.mpf(0)] * nterms
        for k in range(nterms):
            for i, v in enumerate(tk[k]):
                mt[i] += c[k] * v
        m = [mp.mpf(0)] * nterms
        for i in range(nterms):
            for j in range(i + 1):
                m[j] += mt[i] * mp.binomial(i, j) * (2 / umax) ** j * (-1) ** (i - j)
        return m, tail

    def s_fn(u):
        r = mp.sqrt(u)
        return (mp.sin(r) - r) / r ** 3

    def c_fn(u):
        r = mp.sqrt(u)
        return (mp.cos(r) - 1 + u / 2) / (u * u)

    ms, ts = fit(s_fn, 6)
    mc, tc = fit(c_fn, 6)
    print(f"sincos: S tail {float(ts):.1e}, C tail {float(tc):.1e} (times r^3, r^4 <= 0.5, 0.4)")
    return [float(p1), float(p2), float(p3)], [float(v) for v in ms], [float(v) for v in mc]


def main():
    pieces = []
    for idx, name, tol in [(0, "p0_far", mp.mpf("4e-18")), (1, "xq0_far", mp.mpf("4e-18") * XF)]:
        c = cheb_in_y(idx)
        scale = abs(c[0])
        ct = truncate(c, tol * scale)
        m = to_monomials_in_y(ct)
        md = [float(v) for v in m]
        print(f"{name}: {len(ct)} terms, largest dropped Chebyshev coefficient "
              f"{float(max(abs(v) for v in c[len(ct):])):.2e}, sum |m_k| = {float(sum(abs(v) for v in m)):.4f}")
        pieces.append((name, md, len(ct)))
    # Validation against mpmath: relative error of P and of x Q; and of H0 = J0 - j Y0
    # in |H| (the Horner rounding in numpy is slightly worse than with FMAs).
    xs = [mp.mpf(XF) * mp.mpf(10) ** (mp.mpf(6) * i / 3999) * (1 + mp.mpf(i % 7) * mp.mpf("1e-4"))
          for i in range(4000)]
    worst = [0.0, 0.0]
    for x in xs:
        p, xq = pq(x)
        y = np.float64(float((XF / x) ** 2))
        for k, ref in enumerate((p, xq)):
            got = horner(pieces[k][1], y)
            worst[k] = max(worst[k], float(abs((mp.mpf(float(got)) - ref) / ref)))
    print(f"max relative error (double Horner vs mpmath): P {worst[0]:.2e}, xQ {worst[1]:.2e}")

    out = [f"""/// @file
/// @brief GENERATED by scripts/gen_hankel_far_coefficients.py (mpmath, 50 digits): do not edit.
///        Hankel's P(x) and x Q(x) of order 0 for x > {XF} as polynomials in y = ({XF}/x)^2,
///        highest degree first (Horner). Measured max relative error of the double
///        evaluation against mpmath over x in ({XF}, 3.2e7]: P {worst[0]:.1e}, x Q {worst[1]:.1e}.
#pragma once

#include "../../core/config.hpp"

namespace emgpu::math::detail::coef {{

/// Below this argument the general Chebyshev pieces apply.
inline constexpr double hankel_far_x = {XF}.0;
"""]
    for name, md, nt in pieces:
        lines = [f"  double r = {md[-1]:.17e};"]
        for v in reversed(md[:-1]):
            lines.append(f"  r = r * y + {v:.17e};")
        out.append(f"""
/// {name}(y), y = ({XF}/x)^2 in (0, 1]: {nt} terms.
EMGPU_HD inline double {name}(double y) {{
""" + "\n".join(lines) + "\n  return r;\n}\n")
    cw, ms, mc = trig_pieces()
    out.append(f"""
/// pi/2 = P1 + P2 + P3 (P1, P2 with 33 significant bits: n P1, n P2 exact for |n| < 2^20).
inline constexpr double half_pi_1 = {cw[0]:.17e};
inline constexpr double half_pi_2 = {cw[1]:.17e};
inline constexpr double half_pi_3 = {cw[2]:.17e};
""")
    for name, m, what in [("sin_poly", ms, "(sin r - r) / r^3"), ("cos_poly", mc, "(cos r - 1 + r^2/2) / r^4")]:
        lines = [f"  double r = {m[-1]:.17e};"]
        for v in reversed(m[:-1]):
            lines.append(f"  r = r * u + {v:.17e};")
        out.append(f"""
/// {what} as a polynomial in u = r^2, |r| <= pi/4 + 0.01.
EMGPU_HD inline double {name}(double u) {{
""" + "\n".join(lines) + "\n  return r;\n}\n")
    out.append("\n}  // namespace emgpu::math::detail::coef\n")
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "include", "emgpu", "math", "detail", "hankel_far_coefficients.hpp")
    with open(path, "w") as f:
        f.write("".join(out))
    print("wrote", os.path.normpath(path))


if __name__ == "__main__":
    main()
