#!/usr/bin/env python3
"""Reference values of emgpu::analytic::pec_cylinder_tm at large ka (radius 1 m,
k = ka, E0 = 1, eta = 376.730313668), with mpmath at 40 digits, for the test
"Mie series at large ka against mpmath" in tests/scattering2d/test_scattering2d_host.cpp.

mpmath's besselj/bessely per order are too slow for 1e6 orders, so the orders
come from the same recurrences as in C++ but at 40 digits: J_n by Miller's
backward recurrence started far above ka and scaled to mpmath's J_0(ka), Y_n by
forward recurrence from mpmath's Y_0, Y_1. The angles are the doubles written
below, psi = phi - phi_inc and n psi are formed at 40 digits. Prints C++
initialisers {ka, phi_inc, phi, sigma, Re J_z, Im J_z}. Runs ~10 minutes.
"""
import mpmath as mp

mp.mp.dps = 40
ETA = mp.mpf('376.730313668')
CASES = {1e5: [(0.0, 3.14159)], 1e6: [(0.0, 3.14159), (0.3, 2.9), (0.7, 0.1)]}


def orders(ka):
    x = mp.mpf(ka)
    n_max = int(ka + 30 * ka ** (1 / 3.0) + 60)  # above mie_truncation(ka)
    start = n_max + 60 + int(6 * ka ** 0.5)
    big, small = mp.mpf(10) ** 100, mp.mpf(10) ** -100
    j = [mp.mpf(0)] * (start + 2)
    j[start] = mp.mpf(10) ** -30
    for n in range(start, 0, -1):
        j[n - 1] = 2 * n / x * j[n] - j[n + 1]
        if abs(j[n - 1]) > big:
            for m in range(n - 1, start + 1):
                j[m] *= small
    scale = mp.besselj(0, x) / j[0]
    jn = [v * scale for v in j[:n_max + 1]]
    yn = [mp.bessely(0, x), mp.bessely(1, x)]
    for n in range(1, n_max):
        yn.append(2 * n / x * yn[n] - yn[n - 1])
    return x, jn, yn


def main():
    for ka, angles in CASES.items():
        x, jn, yn = orders(ka)
        h = [mp.mpc(a, -b) for a, b in zip(jn, yn)]
        for phi_inc, phi in angles:
            psi = mp.mpf(phi) - mp.mpf(phi_inc)
            s = jn[0] / h[0]
            cur = 1 / h[0]
            for n in range(1, len(h)):
                c = 2 * mp.cos(n * psi)
                s += c * jn[n] / h[n]
                cur += c * mp.mpc(0, -1) ** (n % 4) / h[n]
            sigma = 4 / x * abs(s) ** 2
            cur *= 2 / (mp.pi * x * ETA)
            print('{%s, %s, %s, %s, %s, %s},' % (repr(ka), repr(phi_inc), repr(phi), mp.nstr(sigma, 20),
                                                 mp.nstr(cur.real, 20), mp.nstr(cur.imag, 20)), flush=True)


if __name__ == '__main__':
    main()
