"""NumPy reference for a real GGUF model (the default SmolLM2-135M Q4_1):
weights dequantized by the `gguf` package, Q/K rows un-permuted back to HF
order (FORMATS.md §1.4), then numpy_llama.forward in float64. Writes a
fixture (last-position logits of a fixed prompt + a greedy continuation)
that the C++ oracle test runs through the GGUF plugin on the CPU.

Usage: python numpy_gguf.py models/SmolLM2-135M-Instruct.Q4_1.gguf OUT_DIR
"""
import json
import os
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

import numpy_llama

# Token ids of "<|im_start|>user\nWhat is the capital of France?" in SmolLM2's vocabulary
# are not needed: any ids exercise the math. Fixed, mixed-frequency ids.
PROMPT = [1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47]
GREEDY_STEPS = 16

HF_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight", "attn_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight", "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight", "attn_v.weight": "self_attn.v_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight", "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight", "ffn_down.weight": "mlp.down_proj.weight",
}


def field(reader, key):
    f = reader.fields[key]
    v = f.parts[f.data[0]]
    return v.tobytes().decode() if f.types[0].name == "STRING" else v[0].item()


def unpermute(w, n_head):
    """GGUF row 2i+j of each head is HF row j*d/2+i."""
    rows, k = w.shape
    d = rows // n_head
    return w.reshape(n_head, d // 2, 2, k).transpose(0, 2, 1, 3).reshape(rows, k)


def load(path):
    r = GGUFReader(path)
    arch = field(r, "general.architecture")
    nh = field(r, f"{arch}.attention.head_count")
    nkv = field(r, f"{arch}.attention.head_count_kv")
    w = {}
    for t in r.tensors:
        a = dequantize(t.data, t.tensor_type).astype(np.float64)
        shape = [int(x) for x in reversed(t.shape)]
        a = a.reshape(shape)
        if t.name.startswith("blk."):
            _, layer, rest = t.name.split(".", 2)
            name = f"model.layers.{layer}." + HF_NAMES[rest]
            if rest == "attn_q.weight" and arch == "llama":
                a = unpermute(a, nh)
            if rest == "attn_k.weight" and arch == "llama":
                a = unpermute(a, nkv)
        else:
            name = HF_NAMES[t.name]
        w[name] = a
    cfg = {
        "hidden_size": field(r, f"{arch}.embedding_length"), "num_attention_heads": nh, "num_key_value_heads": nkv,
        "num_hidden_layers": field(r, f"{arch}.block_count"),
        "rms_norm_eps": field(r, f"{arch}.attention.layer_norm_rms_epsilon"),
        "rope_theta": field(r, f"{arch}.rope.freq_base") if f"{arch}.rope.freq_base" in r.fields else 10000.0,
        "max_position_embeddings": field(r, f"{arch}.context_length"),
        "tie_word_embeddings": "lm_head.weight" not in w,
    }
    cfg["_max_model_len"] = cfg["max_position_embeddings"]
    return cfg, w


def main():
    path, out = sys.argv[1], sys.argv[2]
    cfg, w = load(path)
    vocab = w["model.embed_tokens.weight"].shape[0]
    seq, greedy, margins = list(PROMPT), [], []
    first = None
    for _ in range(GREEDY_STEPS):
        last = numpy_llama.forward(cfg, w, seq)[-1]
        if first is None:
            first = last
        order = np.argsort(-last)
        greedy.append(int(order[0]))
        margins.append(float(last[order[0]] - last[order[1]]))
        seq.append(greedy[-1])
    os.makedirs(out, exist_ok=True)
    first.astype("<f4").tofile(os.path.join(out, "logits.f32"))
    root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump({"source": "numpy+gguf", "prompt_ids": PROMPT, "greedy_ids": greedy, "greedy_margins": margins,
                   "vocab_size": vocab, "model_file": os.path.relpath(os.path.abspath(path), root),
                   "logits_last_only": True, "max_model_len": 256}, f)
    print("wrote", out)


if __name__ == "__main__":
    main()
