#!/usr/bin/env python3
"""Prints what one decode step of a bench model reads, for aph_bench_engine's
--weight-read-bytes and --matmul-params:

    read_bytes.py MODEL SHAPE  ->  "<weight bytes read> <matmul parameters>"

MODEL is a safetensors directory or a GGUF file of make_model.py's SHAPE. The
bytes are the file's size scaled to the tensors a step streams: all of them
but the embedding table, which is gathered a row at a time (unless the
embeddings are tied, and the table is the lm_head too).
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_model import SHAPES, tensor_list  # noqa: E402


def main():
    path, shape = sys.argv[1], sys.argv[2]
    c = SHAPES[shape]
    if os.path.isdir(path):
        size = sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path) if f.endswith(".safetensors"))
    else:
        size = os.path.getsize(path)
    total = sum(math.prod(s) for _, s, _ in tensor_list(c))
    embed = c["vocab_size"] * c["hidden_size"]
    streamed = total if c["tie_word_embeddings"] else total - embed
    matmul = total - embed + (embed if c["tie_word_embeddings"] else 0)
    print(int(size * streamed / total), matmul)


if __name__ == "__main__":
    main()
