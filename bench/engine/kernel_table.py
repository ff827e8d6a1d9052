#!/usr/bin/env python3
"""Summarize an `ncu --csv --metrics gpu__time_duration.sum` log of decode steps.

Reads ncu's CSV (one row per profiled kernel, in launch order) and prints:
  - per kernel name: launches, total and mean duration, share of the total;
  - the last --tail launches in order (one decode step, to see its shape).
Kernel durations under ncu are serialized: no overlap, no PDL, no launch gaps,
so the sum is the GPU work alone; the gap to the measured step time is launch
and scheduling overhead.
"""
import argparse
import collections
import csv
import sys


def rows(path):
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    for r in csv.DictReader(lines):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = r.get("Metric Unit", "nsecond")
        value = float(r["Metric Value"].replace(",", ""))
        scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}.get(unit, 1e-3)
        yield r["Kernel Name"], r.get("Grid Size", ""), value * scale


def short(name, width=70):
    base = name.split("(")[0]
    return base if len(base) <= width else base[: width - 3] + "..."


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("csv")
    ap.add_argument("--tail", type=int, default=0, help="print the last N launches in order")
    ap.add_argument("--skip", type=int, default=0, help="ignore the first N launches (prefill)")
    a = ap.parse_args()
    launches = list(rows(a.csv))[a.skip:]
    if not launches:
        sys.exit("kernel_table: no gpu__time_duration rows in " + a.csv)
    total = sum(t for _, _, t in launches)
    by = collections.defaultdict(lambda: [0, 0.0])
    for name, _, t in launches:
        by[short(name)][0] += 1
        by[short(name)][1] += t
    print(f"{len(launches)} launches, {total:.1f} us of kernel time")
    print(f"{'kernel':70s} {'n':>6s} {'total us':>10s} {'mean us':>8s} {'share':>6s}")
    for name, (n, t) in sorted(by.items(), key=lambda kv: -kv[1][1]):
        print(f"{name:70s} {n:6d} {t:10.1f} {t / n:8.2f} {100 * t / total:5.1f}%")
    if a.tail:
        print(f"\nlast {a.tail} launches:")
        for name, grid, t in launches[-a.tail:]:
            print(f"{t:8.2f} us  {grid:>18s}  {short(name)}")


if __name__ == "__main__":
    main()
