"""A plain NumPy reference of the Llama-family forward pass (Llama, Mistral,
Qwen2, SmolLM2) for tiny random-weight models, independent of the C++ code.

It writes HF-style model directories (config.json + model.safetensors) and a
reference (logits at every prompt position + a greedy continuation) in the
fixture format the C++ oracle test reads, the same format
make_reference.py writes from HF transformers on the GPU machine:

  <fixture>/config.json, model.safetensors
  <fixture>/reference.json  {"source", "prompt_ids", "greedy_ids", "greedy_margins", "vocab_size"}
  <fixture>/logits.f32      float32 little-endian [len(prompt_ids), vocab_size]

Usage: python numpy_llama.py OUT_DIR   (writes one fixture per model below)
"""
import json
import math
import os
import struct
import sys

import numpy as np

# ---------------------------------------------------------------- safetensors


def write_safetensors(path, tensors):
    """tensors: name -> (dtype_name, np.ndarray of the stored bits)."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        dtype, arr = tensors[name]
        raw = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def to_bf16_bits(x):
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return bits.astype(np.uint16)


def from_bf16_bits(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


# ---------------------------------------------------------------- RoPE tables


def inv_freq_table(cfg, seq_len):
    """inv_freq and attention scaling as transformers' rope init functions define them."""
    d = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    base = float(cfg.get("rope_theta", 10000.0))
    rs = cfg.get("rope_scaling") or {}
    kind = rs.get("rope_type", rs.get("type", "default"))
    max_pos = cfg["max_position_embeddings"]
    idx = np.arange(0, d, 2, dtype=np.float64)
    scale = 1.0
    if kind == "dynamic" and seq_len > max_pos:
        f = rs["factor"]
        base = base * ((f * seq_len / max_pos) - (f - 1)) ** (d / (d - 2))
    inv = 1.0 / base ** (idx / d)
    if kind == "linear":
        inv = inv / rs["factor"]
    elif kind == "llama3":
        f, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        l0 = rs["original_max_position_embeddings"]
        wl = 2 * math.pi / inv
        smooth = (l0 / wl - lo) / (hi - lo)
        mid = (1 - smooth) * inv / f + smooth * inv
        inv = np.where(wl < l0 / hi, inv, np.where(wl > l0 / lo, inv / f, mid))
    elif kind == "yarn":
        f = rs["factor"]
        l0 = rs.get("original_max_position_embeddings", max_pos)
        bf, bs = rs.get("beta_fast", 32), rs.get("beta_slow", 1)

        def corr(r):
            return d * math.log(l0 / (r * 2 * math.pi)) / (2 * math.log(base))

        low, high = max(math.floor(corr(bf)), 0), min(math.ceil(corr(bs)), d - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(d // 2) - low) / (high - low), 0, 1)
        inv = inv / f * ramp + inv * (1 - ramp)
        scale = rs.get("attention_factor") or (0.1 * math.log(f) + 1.0)
    elif kind == "longrope":
        l0 = cfg.get("original_max_position_embeddings", rs.get("original_max_position_embeddings", max_pos))
        ext = np.array(rs["long_factor"] if seq_len > l0 else rs["short_factor"], dtype=np.float64)
        inv = 1.0 / (ext * base ** (idx / d))
        factor = max_pos / l0
        scale = rs.get("attention_factor") or (math.sqrt(1 + math.log(factor) / math.log(l0)) if factor > 1 else 1.0)
    return inv, scale


# ---------------------------------------------------------------- forward


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, pos, inv, scale):
    """NEOX (HF rotate_half) on x [T, heads, d]."""
    ang = pos[:, None].astype(np.float64) * inv[None, :]
    cos = np.concatenate([np.cos(ang), np.cos(ang)], -1)[:, None, :] * scale
    sin = np.concatenate([np.sin(ang), np.sin(ang)], -1)[:, None, :] * scale
    half = x.shape[-1] // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return x * cos + rot * sin


def forward(cfg, w, ids):
    """Logits [T, V] (float64) for the whole sequence `ids` (causal)."""
    h, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    nkv = cfg.get("num_key_value_heads", nh)
    d = cfg.get("head_dim") or h // nh
    eps = cfg["rms_norm_eps"]
    t = len(ids)
    pos = np.arange(t)
    inv, scale = inv_freq_table(cfg, cfg["_max_model_len"])
    x = w["model.embed_tokens.weight"][ids]
    mask = np.triu(np.full((t, t), -np.inf), 1)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        a = rms_norm(x, w[p + "input_layernorm.weight"], eps)

        def proj(name):
            y = a @ w[p + f"self_attn.{name}.weight"].T
            b = w.get(p + f"self_attn.{name}.bias")
            return y if b is None else y + b

        q = rope(proj("q_proj").reshape(t, nh, d), pos, inv, scale)
        k = rope(proj("k_proj").reshape(t, nkv, d), pos, inv, scale)
        v = proj("v_proj").reshape(t, nkv, d)
        rep = nh // nkv
        k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
        s = np.einsum("qhd,khd->hqk", q, k) / math.sqrt(d) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = np.einsum("hqk,khd->qhd", s, v).reshape(t, nh * d)
        x = x + o @ w[p + "self_attn.o_proj.weight"].T
        m = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        g = m @ w[p + "mlp.gate_proj.weight"].T
        u = m @ w[p + "mlp.up_proj.weight"].T
        x = x + (g / (1 + np.exp(-g)) * u) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else w["lm_head.weight"]
    return x @ head.T


# ---------------------------------------------------------------- models


def random_model(cfg, seed, dtype="F32"):
    """Random weights (stored in `dtype`) and their float64 values."""
    rng = np.random.default_rng(seed)
    h, nh, inter, v = cfg["hidden_size"], cfg["num_attention_heads"], cfg["intermediate_size"], cfg["vocab_size"]
    nkv = cfg.get("num_key_value_heads", nh)
    d = cfg.get("head_dim") or h // nh
    shapes = {"model.embed_tokens.weight": (v, h), "model.norm.weight": (h,)}
    if not cfg.get("tie_word_embeddings"):
        shapes["lm_head.weight"] = (v, h)
    qkv_bias = cfg.get("attention_bias") or cfg["architectures"][0] == "Qwen2ForCausalLM"
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes[p + "input_layernorm.weight"] = (h,)
        shapes[p + "post_attention_layernorm.weight"] = (h,)
        for name, n, k in [("q_proj", nh * d, h), ("k_proj", nkv * d, h), ("v_proj", nkv * d, h), ("o_proj", h, nh * d)]:
            shapes[p + f"self_attn.{name}.weight"] = (n, k)
            if qkv_bias and name != "o_proj":
                shapes[p + f"self_attn.{name}.bias"] = (n,)
        shapes[p + "mlp.gate_proj.weight"] = (inter, h)
        shapes[p + "mlp.up_proj.weight"] = (inter, h)
        shapes[p + "mlp.down_proj.weight"] = (h, inter)
    stored, values = {}, {}
    for name, shape in shapes.items():
        if name.endswith("norm.weight"):
            val = 1.0 + 0.1 * rng.standard_normal(shape)
        elif name.endswith("embed_tokens.weight"):
            val = rng.standard_normal(shape)
        else:
            val = rng.standard_normal(shape) / math.sqrt(shape[-1]) * (0.5 if name.endswith("bias") else 1.0)
        val = val.astype(np.float32)
        if dtype == "BF16":
            bits = to_bf16_bits(val)
            stored[name] = ("BF16", bits)
            values[name] = from_bf16_bits(bits).astype(np.float64)
        elif dtype == "F16":
            half = val.astype(np.float16)
            stored[name] = ("F16", half)
            values[name] = half.astype(np.float64)
        else:
            stored[name] = ("F32", val)
            values[name] = val.astype(np.float64)
    return stored, values


def base_config(arch="LlamaForCausalLM", **kw):
    # head_dim 64 is the smallest the attention kernels take; a narrow hidden
    # size keeps the committed fixtures small.
    cfg = {
        "architectures": [arch], "model_type": {"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral",
                                                 "Qwen2ForCausalLM": "qwen2"}[arch],
        "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
        "num_key_value_heads": 1, "head_dim": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "max_position_embeddings": 256, "vocab_size": 131, "tie_word_embeddings": False, "hidden_act": "silu",
        "torch_dtype": "float32", "bos_token_id": 1, "eos_token_id": 2,
    }
    cfg.update(kw)
    return cfg


# name -> (config, stored weight dtype). Several shapes: GQA 1/2/4, odd vocab
# sizes, tied and untied, derived and explicit head_dim, every rope scaling,
# QKV bias. Weights are stored as BF16 mostly (half the bytes; both sides
# compute in fp32 from the same rounded values).
MODELS = {
    "llama_gqa2": (base_config(), "BF16"),
    "llama_f32_mha_tied": (base_config(num_key_value_heads=2, tie_word_embeddings=True, vocab_size=97), "F32"),
    "llama_derived_headdim": (base_config(hidden_size=128, num_hidden_layers=1, head_dim=None), "F16"),
    "llama_gqa4_3layers": (base_config(num_attention_heads=4, num_key_value_heads=1, num_hidden_layers=3), "BF16"),
    "llama_rope_linear": (base_config(rope_scaling={"type": "linear", "factor": 2.0}), "BF16"),
    "llama_rope_dynamic": (base_config(rope_scaling={"type": "dynamic", "factor": 2.0}), "BF16"),
    "llama3_rope": (base_config(rope_theta=500000.0, rope_scaling={
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64}), "BF16"),
    "llama_rope_yarn": (base_config(rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                                  "original_max_position_embeddings": 64}), "BF16"),
    "llama_rope_longrope": (base_config(original_max_position_embeddings=64, rope_scaling={
        "rope_type": "longrope", "short_factor": [1.0 + 0.05 * i for i in range(32)],
        "long_factor": [1.5 + 0.1 * i for i in range(32)], "original_max_position_embeddings": 64}), "BF16"),
    "mistral_gqa2": (base_config("MistralForCausalLM", sliding_window=4096), "BF16"),
    "qwen2_bias_tied": (base_config("Qwen2ForCausalLM", tie_word_embeddings=True, vocab_size=151,
                                    rope_theta=1000000.0), "BF16"),
    "smollm2_tied": (base_config(tie_word_embeddings=True, torch_dtype="bfloat16", vocab_size=113), "BF16"),
}

PROMPT_LEN = 7
GREEDY_STEPS = 64


def make_fixture(out_dir, name, cfg, dtype, seed, greedy_steps=GREEDY_STEPS):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    stored, values = random_model(cfg, seed, dtype)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({k: v for k, v in cfg.items() if v is not None}, f, indent=1)
    write_safetensors(os.path.join(d, "model.safetensors"), stored)
    run_cfg = dict(cfg, _max_model_len=cfg["max_position_embeddings"])
    rng = np.random.default_rng(seed + 1000)
    prompt = [int(x) for x in rng.integers(0, cfg["vocab_size"], PROMPT_LEN)]
    logits = forward(run_cfg, values, prompt)
    seq, greedy, margins = list(prompt), [], []
    last = logits[-1]
    for _ in range(greedy_steps):
        order = np.argsort(-last)
        greedy.append(int(order[0]))
        margins.append(float(last[order[0]] - last[order[1]]))
        seq.append(int(order[0]))
        last = forward(run_cfg, values, seq)[-1]
    logits.astype("<f4").tofile(os.path.join(d, "logits.f32"))
    with open(os.path.join(d, "reference.json"), "w") as f:
        json.dump({"source": "numpy", "prompt_ids": prompt, "greedy_ids": greedy, "greedy_margins": margins,
                   "vocab_size": cfg["vocab_size"]}, f)
    return d


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "fixtures", "numpy")
    for i, (name, (cfg, dtype)) in enumerate(sorted(MODELS.items())):
        make_fixture(out, name, cfg, dtype, seed=1234 + i)
        print("wrote", os.path.join(out, name))


if __name__ == "__main__":
    main()
