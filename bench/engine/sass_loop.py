#!/usr/bin/env python3
"""Instruction mix of a kernel's main loop, from `cuobjdump -sass` output.

Without a GPU this is how a change to a hot loop is checked before any
device time goes to it (docs/PERFORMANCE.md, "How to look"):

    cuobjdump -sass build/.../tile_gemm.cu.o > /tmp/k.sass
    python3 bench/engine/sass_loop.py /tmp/k.sass 'tile_gemm_kernelILi12E13__nv_bfloat16Li4E' HMMA

For every function whose mangled name holds the pattern it prints the
function's instruction count and its loops (the spans of backward branches)
that hold the most instructions of the given kind (default LDG), each with
its length in instructions and its opcodes by count. Counts are static: one
pass through the loop body as compiled, every branch of it included.
"""
import collections
import re
import sys

INSTR = re.compile(r"\s+/\*([0-9a-f]{4,6})\*/\s+(.*?)\s*;")


def functions(text):
    for chunk in re.split(r"\n\s*Function : ", text)[1:]:
        name, _, body = chunk.partition("\n")
        instrs = []
        for line in body.split("\n"):
            m = INSTR.match(line)
            if m:
                instrs.append((int(m.group(1), 16), m.group(2)))
        yield name.strip(), instrs


def opcode(text):
    words = text.split()
    op = words[1] if words[0].startswith("@") else words[0]
    return op.split(".")[0]


def loops(instrs, key):
    found = []
    for addr, text in instrs:
        if opcode(text) != "BRA":
            continue
        targets = re.findall(r"0x([0-9a-f]+)", text)
        if targets and int(targets[-1], 16) < addr:
            start = int(targets[-1], 16)
            body = [t for a, t in instrs if start <= a <= addr]
            found.append((sum(key in t for t in body), start, addr, body))
    found.sort(key=lambda f: -f[0])
    return found


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    path, pattern = sys.argv[1], sys.argv[2]
    key = sys.argv[3] if len(sys.argv) > 3 else "LDG"
    with open(path) as f:
        text = f.read()
    matched = False
    for name, instrs in functions(text):
        if pattern not in name:
            continue
        matched = True
        print(f"{name}: {len(instrs)} instructions")
        for _, start, end, body in loops(instrs, key)[:2]:
            mix = collections.Counter(opcode(t) for t in body)
            print(f"  loop {start:#x}-{end:#x}: {len(body)}  " + " ".join(f"{k}:{v}" for k, v in mix.most_common()))
    if not matched:
        sys.exit(f"no function name in {path} holds {pattern!r}")


if __name__ == "__main__":
    main()
