#!/usr/bin/env python3
"""Plot the CSV output of examples/cylinder_scattering: bistatic echo width
(numerical vs exact, dB) and |J_z| along the contour, for the first incidence.

usage: plot_scattering.py [PREFIX] [-o scattering.png]
"""
import argparse
import csv
import math

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('prefix', nargs='?', default='scattering')
    ap.add_argument('-o', '--output', default=None)
    args = ap.parse_args()
    sig = read(args.prefix + '_sigma.csv')
    cur = read(args.prefix + '_current.csv')
    inc = sig[0]['incidence_deg']
    sig = [r for r in sig if r['incidence_deg'] == inc]
    cur = [r for r in cur if r['incidence_deg'] == inc]
    exact = 'sigma_db_exact' in sig[0]

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
    phi = [float(r['phi_deg']) for r in sig]
    a1.plot(phi, [float(r['sigma_db']) for r in sig], 'C0-', lw=2, label='emgpu')
    if exact:
        a1.plot(phi, [float(r['sigma_db_exact']) for r in sig], 'k--', lw=1, label='exact (Mie series)')
    a1.set_xlabel('observation angle phi (deg)')
    a1.set_ylabel('echo width sigma (dB re 1 m)')
    a1.set_title('bistatic echo width, incidence %s deg' % inc)
    a1.grid(True, alpha=0.3)
    a1.legend()

    # |J_z| against arc length along the contour (unknowns are in contour order).
    s, acc, prev = [], 0.0, None
    for r in cur:
        p = (float(r['x']), float(r['y']))
        if prev is not None:
            acc += math.hypot(p[0] - prev[0], p[1] - prev[1])
        s.append(acc)
        prev = p
    a2.plot(s, [math.hypot(float(r['re_jz']), float(r['im_jz'])) * 1e3 for r in cur], 'C0-', lw=2, label='emgpu')
    if 're_jz_exact' in cur[0]:
        a2.plot(s, [math.hypot(float(r['re_jz_exact']), float(r['im_jz_exact'])) * 1e3 for r in cur], 'k--', lw=1,
                label='exact (Mie series)')
    a2.set_xlabel('arc length along the contour (m)')
    a2.set_ylabel('|J_z| (mA/m per V/m)')
    a2.set_title('surface current')
    a2.grid(True, alpha=0.3)
    a2.legend()
    fig.tight_layout()
    out = args.output or args.prefix + '.png'
    fig.savefig(out, dpi=120)
    print('wrote', out)


if __name__ == '__main__':
    main()
