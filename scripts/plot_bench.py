#!/usr/bin/env python3
"""Turns emgpu benchmark JSON into PNG charts for docs/.

    python3 scripts/plot_bench.py bench_lu.json --x n --metric TFLOP/s --out docs/img/lu.png
    python3 scripts/plot_bench.py batched.json --x n --targets \
        --metric speedup_vs_cublas,speedup_vs_cusolver --out docs/img/batched_gpu.png

One line per (name, backend) series and metric; x is a parameter, y one or more
metrics (comma list; default: the first metric of the first result), both on
log axes when they span > 10x. --targets draws each series' "target" metric
(the issue's goal, as the benchmarks write it) as a dashed line of its colour.
Several files: a point (series, x) in a later file replaces the earlier one,
so a partial rerun (e.g. --only svd) can be laid over a full run.
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
    ap.add_argument("--metric", help="metric(s) on the y axis, comma list (default: first metric)")
    ap.add_argument("--targets", action="store_true", help="dashed line at each series' 'target' metric")
    ap.add_argument("--series", default="name,backend",
                    help="comma list of fields/params that distinguish series")
    ap.add_argument("--title")
    ap.add_argument("--ylabel", help="y axis label (default: the metric names)")
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
    metrics = (a.metric or next(iter(rows[0]["metrics"]))).split(",")
    keys = a.series.split(",")
    series = defaultdict(dict)   # label -> {x: y}; later files replace earlier points
    targets = defaultdict(dict)
    for r in rows:
        for metric in metrics:
            if x not in r["params"] or r["metrics"].get(metric) is None:
                continue
            label = " ".join(str(r.get(k, r["params"].get(k, ""))) for k in keys)
            if len(metrics) > 1:
                label += f" ({metric})"
            series[label][r["params"][x]] = r["metrics"][metric]
            if a.targets and r["metrics"].get("target") is not None:
                targets[label][r["params"][x]] = r["metrics"]["target"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    xs_all, ys_all = [], []
    for label, pts in sorted(series.items()):
        xs, ys = zip(*sorted(pts.items()))
        xs_all += xs
        ys_all += ys
        line, = ax.plot(xs, ys, marker="o", label=label)
        if targets.get(label):
            tx, ty = zip(*sorted(targets[label].items()))
            ys_all += ty
            ax.plot(tx, ty, ls="--", drawstyle="steps-mid", color=line.get_color(), alpha=0.7,
                    label=f"target, {label}")
    if xs_all and min(xs_all) > 0 and max(xs_all) / min(xs_all) > 10:
        ax.set_xscale("log", base=2)
    if ys_all and min(ys_all) > 0 and max(ys_all) / min(ys_all) > 10:
        ax.set_yscale("log")
    ax.set_xlabel(x)
    ax.set_ylabel(a.ylabel or ", ".join(metrics))
    ax.set_title(a.title or f"emgpu {bench} ({machine})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
