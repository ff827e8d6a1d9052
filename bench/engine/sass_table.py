#!/usr/bin/env python3
"""Summarize ncu's SASS view of one kernel launch (`ncu -i REPORT --page source
--csv --print-source sass`, as scripts/device-run.sh's stalls step writes it).

Prints the kernel's executed warp instructions and stall samples, the stall
reasons summed over the kernel, then its hot regions: runs of consecutive
instructions that each executed at least --hot times (a loop body, usually),
with their instruction and sample counts and the opcodes that dominate them.

Stop 19 read dynamic temperature this way: 6,300 instructions a warp for 16
tokens a thread, mostly double arithmetic, told that the kernel was bound by
the FP64 rate and which loops to change; a per-kernel duration could not.
"""
import argparse
import collections
import csv
import sys


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    # Line 1 names the kernel; line 2 is the header; then one row per instruction.
    header = rows[1]
    return rows[0], header, [r for r in rows[2:] if len(r) == len(header)]


def count(value):
    return int(value.replace(",", "") or 0)


def opcode(source):
    words = source.split()
    if words and words[0].startswith("@"):  # a predicate guard
        words = words[1:]
    return words[0].split(".")[0] if words else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--hot", type=int, default=1000, help="executions that make an instruction hot")
    ap.add_argument("--min-share", type=float, default=0.02,
                    help="regions below this share of instructions and of samples are left out")
    ap.add_argument("--top", type=int, default=15,
                    help="the instructions with the most stall samples, listed with their main reasons")
    args = ap.parse_args()
    title, header, rows = load(args.csv)
    col = {name: i for i, name in enumerate(header)}
    executed, sampled, source = col["Instructions Executed"], col["Warp Stall Sampling (All Samples)"], col["Source"]
    total = sum(count(r[executed]) for r in rows)
    samples = sum(count(r[sampled]) for r in rows)
    print(" ".join(title).strip()[:160])
    print(f"{total} warp instructions executed, {samples} stall samples, {len(rows)} SASS lines")
    if total == 0:
        sys.exit("no executed instructions: was SourceCounters collected?")

    stalls = collections.Counter()
    for name, i in col.items():
        if name.startswith("stall_") and "Not Issued" not in name:
            stalls[name[len("stall_"):]] += sum(count(r[i]) for r in rows)
    print("stall samples by reason: " + ", ".join(f"{k} {v}" for k, v in stalls.most_common(8)))

    print(f"\n{'lines':>11} {'kind':4} {'instr':>9} {'share':>6} {'samples':>7}  first instruction; top opcodes")
    region = None
    regions = []
    for i, r in enumerate(rows):
        kind = "hot" if count(r[executed]) >= args.hot else "cold"
        if region is None or region["kind"] != kind:
            region = {"kind": kind, "first": i, "last": i, "instr": 0, "samples": 0, "ops": collections.Counter()}
            regions.append(region)
        region["last"] = i
        region["instr"] += count(r[executed])
        region["samples"] += count(r[sampled])
        region["ops"][opcode(r[source])] += count(r[executed])
    for g in regions:
        if g["instr"] < args.min_share * total and g["samples"] < args.min_share * samples:
            continue
        ops = ", ".join(f"{k} {v}" for k, v in g["ops"].most_common(4))
        first = rows[g["first"]][source].strip()[:36]
        print(f"{g['first']:>5}-{g['last']:<5} {g['kind']:4} {g['instr']:>9} {g['instr'] / total:>6.1%} "
              f"{g['samples']:>7}  {first}; {ops}")

    # A latency-bound kernel (a short matvec, a decode attention of a few
    # tiles) has no hot loop: what it waits on is a few instructions, each
    # with its stall reason (long_scoreboard: a global load's data; barrier;
    # membar; ...).
    reasons = [(name[len("stall_"):], i) for name, i in col.items()
               if name.startswith("stall_") and "Not Issued" not in name]
    print(f"\n{'line':>5} {'samples':>7} {'share':>6}  instruction; main stall reasons")
    for i in sorted(range(len(rows)), key=lambda i: -count(rows[i][sampled]))[:args.top]:
        r = rows[i]
        n = count(r[sampled])
        if n == 0:
            break
        why = sorted(((count(r[j]), k) for k, j in reasons), reverse=True)[:3]
        print(f"{i:>5} {n:>7} {n / max(samples, 1):>6.1%}  {r[source].strip()[:48]}; "
              + ", ".join(f"{k} {v}" for v, k in why if v > 0))


if __name__ == "__main__":
    main()
