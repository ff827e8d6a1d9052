#!/usr/bin/env python3
"""Random-weight HF Llama checkpoints for benchmarks and tests.

Writes config.json, model.safetensors, tokenizer.json and
tokenizer_config.json. The weights are N(0, 0.02) (norms 1.0): meaningless
text, real shapes and real memory traffic. For speed the tensors are cut from
one pre-generated random pool instead of drawing every value, so an 8B
checkpoint is written at disk speed.

    make_model.py --shape llama3-8b --dtype bf16 --out DIR
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

SHAPES = {
    # Meta-Llama-3-8B
    "llama3-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                      num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                      rope_theta=500000.0, max_position_embeddings=8192, rms_norm_eps=1e-5,
                      tie_word_embeddings=False),
    # SmolLM2-135M
    "smollm2-135m": dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, vocab_size=49152,
                         rope_theta=100000.0, max_position_embeddings=8192, rms_norm_eps=1e-5,
                         tie_word_embeddings=True),
    # For CPU tests: seconds to load and run.
    "tiny": dict(hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, vocab_size=512,
                 rope_theta=10000.0, max_position_embeddings=1024, rms_norm_eps=1e-5,
                 tie_word_embeddings=False),
}

DTYPES = {"bf16": ("BF16", 2), "f16": ("F16", 2), "f32": ("F32", 4)}


def tensor_list(c):
    h, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    hd = h // c["num_attention_heads"]
    kv = c["num_key_value_heads"] * hd
    out = [("model.embed_tokens.weight", (v, h), "rand")]
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        out += [
            (p + "input_layernorm.weight", (h,), "ones"),
            (p + "self_attn.q_proj.weight", (h, h), "rand"),
            (p + "self_attn.k_proj.weight", (kv, h), "rand"),
            (p + "self_attn.v_proj.weight", (kv, h), "rand"),
            (p + "self_attn.o_proj.weight", (h, h), "rand"),
            (p + "post_attention_layernorm.weight", (h,), "ones"),
            (p + "mlp.gate_proj.weight", (i, h), "rand"),
            (p + "mlp.up_proj.weight", (i, h), "rand"),
            (p + "mlp.down_proj.weight", (h, i), "rand"),
        ]
    out.append(("model.norm.weight", (h,), "ones"))
    if not c["tie_word_embeddings"]:
        out.append(("lm_head.weight", (v, h), "rand"))
    return out


def encode(values, dtype):
    if dtype == "f32":
        return values.astype(np.float32).tobytes()
    if dtype == "f16":
        return values.astype(np.float16).tobytes()
    # bf16, rounded to nearest even
    u = values.astype(np.float32).view(np.uint32)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16).tobytes()


def write_safetensors(path, config, dtype, seed):
    st_dtype, esize = DTYPES[dtype]
    tensors = tensor_list(config)
    header, offset = {}, 0
    for name, shape, _ in tensors:
        n = int(np.prod(shape)) * esize
        header[name] = {"dtype": st_dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    header["__metadata__"] = {"format": "pt"}
    hbytes = json.dumps(header, separators=(",", ":")).encode()
    hbytes += b" " * (-len(hbytes) % 8)
    rng = np.random.default_rng(seed)
    pool_elems = 1 << 24
    pool = encode(rng.normal(0.0, 0.02, pool_elems), dtype)
    ones = encode(np.ones(1 << 16), dtype)
    tmp = path + ".partial"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hbytes)))
        f.write(hbytes)
        cursor = 0
        for name, shape, kind in tensors:
            remaining = int(np.prod(shape)) * esize
            src = ones if kind == "ones" else pool
            while remaining > 0:
                start = cursor % len(src) if kind == "rand" else 0
                chunk = min(remaining, len(src) - start)
                f.write(memoryview(src)[start:start + chunk])
                remaining -= chunk
                if kind == "rand":
                    # Shift by an odd number of elements so tensors differ.
                    cursor = start + chunk + 7 * esize
    os.replace(tmp, path)


def bytes_to_unicode():
    # GPT-2's byte-level alphabet (what HF ByteLevel pre-tokenizers use).
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def write_tokenizer(out, vocab_size):
    # Byte-level BPE covering every id the model can emit: 256 byte tokens, a
    # few merged pieces, filler tokens, then BOS/EOS as added special tokens.
    alphabet = bytes_to_unicode()
    vocab, merges = {}, []
    for b in range(256):
        vocab[alphabet[b]] = len(vocab)
    space = alphabet[ord(" ")]
    for word in ["the", "and", "ing", "ion"]:
        piece = word[0]
        for ch in word[1:]:
            merges.append(f"{piece} {ch}")
            piece += ch
            if piece not in vocab:
                vocab[piece] = len(vocab)
        merges.append(f"{space} {word}")
        vocab[space + word] = len(vocab)
    n_regular = vocab_size - 2
    i = 0
    while len(vocab) < n_regular:
        vocab[f"{space}w{i}"] = len(vocab)
        i += 1
    bos, eos = "<|begin_of_text|>", "<|end_of_text|>"
    added = [
        {"id": n_regular, "content": bos, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True},
        {"id": n_regular + 1, "content": eos, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True},
    ]
    tok = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": bos, "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": bos, "type_id": 0}},
                                    {"Sequence": {"id": "A", "type_id": 0}},
                                    {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {bos: {"id": bos, "ids": [n_regular], "tokens": [bos]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": vocab, "merges": merges},
    }
    with open(os.path.join(out, "tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False)
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": bos, "eos_token": eos, "add_bos_token": True,
                   "chat_template": "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}"
                                    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"},
                  f)
    return n_regular, n_regular + 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", choices=sorted(SHAPES), required=True)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=0,
                    help="keep only this many layers of the shape (a quick model for kernel profiles)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    c = dict(SHAPES[args.shape])
    if args.layers > 0:
        c["num_hidden_layers"] = args.layers
    bos, eos = write_tokenizer(args.out, c["vocab_size"])
    torch_dtype = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}[args.dtype]
    config = dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_act="silu",
                  attention_bias=False, mlp_bias=False, initializer_range=0.02,
                  bos_token_id=bos, eos_token_id=eos, torch_dtype=torch_dtype, use_cache=True,
                  rope_scaling=None, head_dim=c["hidden_size"] // c["num_attention_heads"], **c)
    write_safetensors(os.path.join(args.out, "model.safetensors"), c, args.dtype, args.seed)
    # config.json last: its presence marks a complete checkpoint for caches.
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    print(f"wrote {args.shape} ({args.dtype}) to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
