#!/usr/bin/env python3
"""Bar chart of `bench_batched_cuda --only host` results (batched::multi_gpu).

For each routine and size: GB/s moved between host and GPUs (the routine's
traffic over the call's time) from pinned and from pageable memory, on one GPU
and on all of them, with the PCIe floor of the same run (the traffic copied
both ways at once, all GPUs together) as a black tick over each pinned bar.

    scripts/plot_host_bench.py docs/results/bench_host_s32_2xh200.json \\
        docs/results/bench_host128_s32_2xh200.json --out docs/img/batched_host.png
"""
import argparse
import json
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows(paths):
    out = []
    for p in paths:
        with open(p) as f:
            data = json.load(f)
        out += data["results"] if isinstance(data, dict) and "results" in data else data
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json", nargs="+")
    ap.add_argument("--out", default="batched_host.png")
    ap.add_argument("--title", default="batches in host memory (batched::multi_gpu)")
    a = ap.parse_args()
    rs = rows(a.json)
    call = re.compile(r"^(\S+) \(host memory, (pinned|pageable), (\d+) GPU\)$")
    floor = re.compile(r"^copy\((\S+) traffic, in and out at once, pinned, (\d+) GPU\)$")
    groups = {}  # (routine, n) -> {(kind, gpus): GB/s}
    floors = {}  # (routine, n, gpus) -> GB/s
    gpus_all = 1
    for r in rs:
        params = dict(r.get("params", []))
        metrics = dict(r.get("metrics", []))
        n = int(params.get("n", 0))
        m = call.match(r["name"])
        if m and "GB/s" in metrics:
            g = int(m.group(3))
            gpus_all = max(gpus_all, g)
            groups.setdefault((m.group(1), n), {})[(m.group(2), g)] = metrics["GB/s"]
        m = floor.match(r["name"])
        if m and "GB/s" in metrics:
            floors[(m.group(1), n, int(m.group(2)))] = metrics["GB/s"]
    keys = sorted(groups, key=lambda k: (k[1], k[0]))
    bars = [("pinned", 1), ("pinned", gpus_all), ("pageable", 1), ("pageable", gpus_all)]
    bars = list(dict.fromkeys(bars))
    colors = {("pinned", 1): "#1f77b4", ("pinned", gpus_all): "#0b3d91",
              ("pageable", 1): "#ff9f40", ("pageable", gpus_all): "#d35400"}
    w = 0.8 / len(bars)
    fig, ax = plt.subplots(figsize=(9, 4.6))
    for i, b in enumerate(bars):
        xs, ys = [], []
        for j, k in enumerate(keys):
            if b in groups[k]:
                xs.append(j + (i - (len(bars) - 1) / 2) * w)
                ys.append(groups[k][b])
        label = f"{b[0]}, {b[1]} GPU" + ("s" if b[1] > 1 else "")
        ax.bar(xs, ys, w * 0.95, label=label, color=colors.get(b))
        if b[0] == "pinned":
            fx = [x for x, k in zip(xs, keys) if (k[0], k[1], b[1]) in floors]
            fy = [floors[(k[0], k[1], b[1])] for k in keys if (k[0], k[1], b[1]) in floors]
            ax.scatter(fx, fy, marker="_", s=300, color="black", zorder=3,
                       label="PCIe floor (same run)" if i == 0 else None)
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels([f"{k[0]}\nn = {k[1]}" for k in keys])
    ax.set_ylabel("GB/s between host and GPUs")
    ax.set_title(a.title)
    ax.grid(axis="y", alpha=0.3)
    ax.set_ylim(0, 1.2 * max([max(g.values()) for g in groups.values()] + list(floors.values()) + [1]))
    ax.legend(fontsize=8, ncol=5, loc="upper center")
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
