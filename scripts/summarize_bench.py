#!/usr/bin/env python3
"""Prints a compact table of emgpu benchmark JSON files (benchmarks/common/bench.hpp)."""
import json
import sys


def main(paths):
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        m = d.get("machine", {})
        print(f"-- {d['benchmark']} on {m.get('gpu') or m.get('cpu')} ({p})")
        for r in d["results"]:
            params = " ".join(f"{k}={v:g}" for k, v in r["params"].items())
            metrics = " ".join(f"{k}={v:.4g}" for k, v in r["metrics"].items() if v is not None)
            print(f"   {r['name']:<22} {r['backend']:<7} {params:<34} {r['median_s']:.4g} s  {metrics}")


if __name__ == "__main__":
    main(sys.argv[1:])
