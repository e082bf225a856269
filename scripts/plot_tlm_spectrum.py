#!/usr/bin/env python3
"""Plots the probe spectrum written by examples/tlm_cavity (CSV with '# mode m n p
theory_hz F tlm_hz F' comment lines) as a PNG, marking the theoretical modes.

usage: python3 scripts/plot_tlm_spectrum.py tlm_cavity_spectrum.csv [out.png]
"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    src = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else src.rsplit(".", 1)[0] + ".png"
    title, modes, f, mag = "TLM cavity", [], [], []
    with open(src) as fh:
        for line in fh:
            if line.startswith("# mode"):
                w = line.split()
                modes.append(((int(w[2]), int(w[3]), int(w[4])), float(w[6]), float(w[8])))
            elif line.startswith("#"):
                title = line[1:].strip()
            elif line[0].isdigit():
                a, b = line.split(",")
                f.append(float(a) * 1e-9)
                mag.append(float(b))
    top = max(mag)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.semilogy(f, [m / top for m in mag], lw=0.8, color="k", label="TLM probe |Ez(f)|")
    for (m, n, p), th, tl in modes:
        colour = "tab:red" if m > 0 and n > 0 else "tab:gray"
        ax.axvline(th * 1e-9, color=colour, ls="--", lw=0.7)
        ax.text(th * 1e-9, 1.5, f"({m},{n},{p})", rotation=90, fontsize=7, ha="right", va="bottom", color=colour)
    ax.set_xlabel("frequency (GHz)")
    ax.set_ylabel("normalised magnitude")
    ax.set_ylim(1e-6, 20)
    ax.set_xlim(0, max(f))
    ax.set_title(title + "\n(dashed: theory; red: modes with Ez, grey: without)", fontsize=9)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    print("wrote", out)


if __name__ == "__main__":
    main()
