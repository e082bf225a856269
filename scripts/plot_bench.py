#!/usr/bin/env python3
"""Turns emgpu benchmark JSON into PNG charts for docs/.

    python3 scripts/plot_bench.py bench_lu.json --x n --metric TFLOP/s --out docs/img/lu.png

One line per (name, backend) series; x is a parameter, y a metric (default: the
first metric of the first result), both on log axes when they span > 10x.
"""
import argparse
import json
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json", nargs="+")
    ap.add_argument("--x", help="parameter on the x axis (default: first parameter)")
    ap.add_argument("--metric", help="metric on the y axis (default: first metric)")
    ap.add_argument("--series", default="name,backend",
                    help="comma list of fields/params that distinguish series")
    ap.add_argument("--title")
    ap.add_argument("--out", default="bench.png")
    a = ap.parse_args()

    rows, machine, bench = [], "", ""
    for p in a.json:
        with open(p) as f:
            d = json.load(f)
        bench = d["benchmark"]
        m = d.get("machine", {})
        machine = m.get("gpu") or m.get("cpu", "")
        rows += d["results"]
    if not rows:
        raise SystemExit("no results")
    x = a.x or next(iter(rows[0]["params"]))
    metric = a.metric or next(iter(rows[0]["metrics"]))
    keys = a.series.split(",")
    series = defaultdict(list)
    for r in rows:
        if x not in r["params"] or metric not in r["metrics"] or r["metrics"][metric] is None:
            continue
        label = " ".join(str(r.get(k, r["params"].get(k, ""))) for k in keys)
        series[label].append((r["params"][x], r["metrics"][metric]))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    xs_all, ys_all = [], []
    for label, pts in sorted(series.items()):
        pts.sort()
        xs, ys = zip(*pts)
        xs_all += xs
        ys_all += ys
        ax.plot(xs, ys, marker="o", label=label)
    if xs_all and min(xs_all) > 0 and max(xs_all) / min(xs_all) > 10:
        ax.set_xscale("log", base=2)
    if ys_all and min(ys_all) > 0 and max(ys_all) / min(ys_all) > 10:
        ax.set_yscale("log")
    ax.set_xlabel(x)
    ax.set_ylabel(metric)
    ax.set_title(a.title or f"emgpu {bench} ({machine})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
