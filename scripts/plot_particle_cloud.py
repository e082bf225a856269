#!/usr/bin/env python3
"""Plot the bistatic echo width sigma(phi) of examples/particle_cloud (CBFM and,
when present, the full direct solution) from its CSV into a PNG.

usage: plot_particle_cloud.py particle_cloud.csv [out.png]
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    src = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else src.rsplit(".", 1)[0] + ".png"
    phi, cbfm, direct = [], [], []
    with open(src) as f:
        for row in csv.DictReader(f):
            phi.append(float(row["phi_deg"]))
            cbfm.append(float(row["sigma_cbfm_db"]))
            d = row.get("sigma_direct_db", "")
            direct.append(float(d) if d else None)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    if all(d is not None for d in direct):
        ax.plot(phi, direct, "k-", lw=2.5, alpha=0.4, label="full direct")
    ax.plot(phi, cbfm, "C0-", lw=1, label="CBFM")
    ax.set_xlabel("observation angle phi (deg)")
    ax.set_ylabel("echo width sigma (dB m)")
    ax.set_xlim(0, 360)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title("Cloud of PEC cylinders, TM plane wave")
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    print("wrote", out)


if __name__ == "__main__":
    main()
