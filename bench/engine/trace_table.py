#!/usr/bin/env python3
"""Where a decode step's GPU time goes, from libaph_kernel_trace.so's CSV.

    python3 bench/engine/trace_table.py TRACE.csv [--steps N] [--list N]

A step is one launch of the most launched CUDA graph (the decode graph of the
batch size the bench ran) plus every kernel that starts before the next
launch (sampling, copies outside the graph). Kernels overlap under
programmatic dependent launch: a kernel starts early and waits for its
producer, so its duration says little. What matters is how far it moves the
end of the GPU's work: its *advance* is its end minus the latest end before
it, split into *idle* (no kernel running before it started: a launch gap)
and *busy* (the rest). A step's advances and its tail idle (after its last
kernel, before the next graph starts) add up to the step's period.

Prints the median period (and the tokens/s it implies at batch 1), a table
per kernel name (calls a step, median duration, busy and idle advance a
step), and one median step kernel by kernel (--list: the first and last N).
"""
import argparse
import re
import statistics
import sys
from collections import defaultdict


def short_name(full):
    """'void aph::x::(anonymous namespace)::k<3, true, __half>(args)' -> 'k<3, true, __half>'."""
    s = full.replace("(anonymous namespace)::", "")
    if s.startswith("void "):
        s = s[5:]
    depth = 0
    for i, ch in enumerate(s):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            s = s[:i]
            break
    head, sep, tail = s.partition("<")
    head = head.rsplit("::", 1)[-1]
    tail = re.sub(r"\b\w+::", "", tail)
    name = head + sep + tail
    return name if len(name) <= 70 else name[:67] + "..."


def read_trace(path):
    names, kernels = {}, []
    with open(path) as f:
        for line in f:
            if line.startswith("N,"):
                _, nid, name = line.rstrip("\n").split(",", 2)
                names[int(nid)] = short_name(name)
            elif line.startswith("K,"):
                p = line.split(",")
                kernels.append({
                    "start": int(p[1]), "end": int(p[2]), "corr": int(p[3]), "graph": int(p[4]),
                    "grid": int(p[6]), "block": int(p[7]), "cluster": int(p[8]), "name": int(p[9]),
                })
    for k in kernels:
        k["name"] = names.get(k["name"], "?")
    kernels.sort(key=lambda k: k["start"])
    return kernels


def steps_of(kernels, keep):
    """The periods of the most launched graph's last `keep` launches."""
    launches = defaultdict(list)  # (graph, correlation) -> kernels
    for k in kernels:
        if k["graph"]:
            launches[(k["graph"], k["corr"])].append(k)
    if not launches:
        sys.exit("trace_table: no kernel ran inside a CUDA graph")
    per_graph = defaultdict(int)
    for g, _ in launches:
        per_graph[g] += 1
    graph = max(per_graph, key=per_graph.get)
    starts = sorted(min(k["start"] for k in ks) for (g, _), ks in launches.items() if g == graph)
    if len(starts) < 3:
        sys.exit("trace_table: the decode graph ran fewer than 3 times")
    chosen = list(zip(starts[:-1], starts[1:]))[-keep:]
    steps, i = [], 0
    for lo, hi in chosen:
        while i < len(kernels) and kernels[i]["start"] < lo:
            i += 1
        j = i
        while j < len(kernels) and kernels[j]["start"] < hi:
            j += 1
        steps.append((lo, hi, kernels[i:j]))
        i = j
    return graph, per_graph[graph], steps


def advances(lo, hi, ks):
    """Per kernel (name, duration, idle, busy) and the step's tail idle, in ns."""
    frontier, rows = lo, []
    for k in ks:
        idle = max(0, k["start"] - frontier)
        adv = max(0, k["end"] - frontier)
        rows.append((k["name"], k["end"] - k["start"], idle, adv - idle))
        frontier = max(frontier, k["end"])
    return rows, max(0, hi - frontier)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--steps", type=int, default=100, help="the last N launches of the decode graph")
    ap.add_argument("--list", type=int, default=24, help="kernels listed from each end of the median step")
    a = ap.parse_args()
    kernels = read_trace(a.trace)
    graph, launches, steps = steps_of(kernels, a.steps)
    periods = [hi - lo for lo, hi, _ in steps]
    period = statistics.median(periods)
    print(f"decode graph {graph}: {launches} launches; the last {len(steps)} steps: period median "
          f"{period / 1e3:.1f} us (min {min(periods) / 1e3:.1f}, max {max(periods) / 1e3:.1f}) "
          f"= {1e9 / period:.0f} steps/s")

    per_name = defaultdict(lambda: {"calls": 0, "dur": [], "idle": 0, "busy": 0})
    tails = []
    per_step_rows = []
    for lo, hi, ks in steps:
        rows, tail = advances(lo, hi, ks)
        tails.append(tail)
        per_step_rows.append((hi - lo, rows, tail))
        for name, dur, idle, busy in rows:
            e = per_name[name]
            e["calls"] += 1
            e["dur"].append(dur)
            e["idle"] += idle
            e["busy"] += busy
    n = len(steps)
    total_busy = sum(e["busy"] for e in per_name.values()) / n
    total_idle = sum(e["idle"] for e in per_name.values()) / n + statistics.mean(tails)
    kernels_per_step = sum(e["calls"] for e in per_name.values()) / n
    print(f"per step: {kernels_per_step:.1f} kernels, busy advance {total_busy / 1e3:.1f} us, "
          f"idle {total_idle / 1e3:.1f} us (of which after the last kernel {statistics.mean(tails) / 1e3:.1f} us)")
    print()
    print(f"{'kernel':72s} {'calls':>6s} {'dur us':>7s} {'busy us':>8s} {'idle us':>8s} {'share':>6s}")
    mean_period = statistics.mean(periods)
    for name, e in sorted(per_name.items(), key=lambda kv: -(kv[1]["busy"] + kv[1]["idle"])):
        busy, idle = e["busy"] / n, e["idle"] / n
        print(f"{name:72s} {e['calls'] / n:6.1f} {statistics.median(e['dur']) / 1e3:7.2f} {busy / 1e3:8.1f} "
              f"{idle / 1e3:8.1f} {100 * (busy + idle) / mean_period:5.1f}%")

    # The median step, kernel by kernel.
    per_step_rows.sort(key=lambda r: r[0])
    span, rows, tail = per_step_rows[len(per_step_rows) // 2]
    print()
    print(f"median step ({span / 1e3:.1f} us), kernel by kernel: duration / idle before / busy advance (us)")
    show = list(enumerate(rows))
    if len(show) > 2 * a.list:
        show = show[:a.list] + [None] + show[-a.list:]
    for item in show:
        if item is None:
            print(f"  ... {len(rows) - 2 * a.list} more")
            continue
        i, (name, dur, idle, busy) = item
        print(f"  {i:4d} {name:70s} {dur / 1e3:7.2f} {idle / 1e3:6.2f} {busy / 1e3:7.2f}")
    print(f"  tail idle {tail / 1e3:.2f}")


if __name__ == "__main__":
    main()
