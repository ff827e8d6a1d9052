"""aphrodite-quantize round trip: random HF checkpoints (llama with Q/K
permutation, sharded; qwen2 with biases, tied embeddings and a hidden size
that forces fallback types) -> GGUF, read back with gguf.GGUFReader and
gguf.quants.dequantize, compared with the source within per-type bounds."""
import json
import struct
import subprocess

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T, GGUFReader
from gguf import quants

# Worst relative RMS error per tensor allowed for Gaussian weights.
BOUNDS = {T.F32: 0.0, T.F16: 1e-3, T.Q8_0: 0.01, T.Q6_K: 0.03, T.Q5_K: 0.06, T.Q5_1: 0.06,
          T.Q5_0: 0.06, T.Q4_K: 0.11, T.Q4_1: 0.12, T.Q4_0: 0.12}


def to_bf16_bytes(x):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_to_f32(h):
    return (h.astype(np.uint32) << 16).view(np.float32)


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        data = to_bf16_bytes(arr).tobytes()
        header[name] = {"dtype": "BF16", "shape": list(arr.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def make_model(d, arch, hidden, layers, heads, kv, inter, vocab, tie, bias, shards=1, tokenizer=True):
    rng = np.random.default_rng(hash(arch) % 1000)
    hd = hidden // heads
    t = {"model.embed_tokens.weight": rng.standard_normal((vocab, hidden)),
         "model.norm.weight": 1 + 0.1 * rng.standard_normal(hidden)}
    if not tie:
        t["lm_head.weight"] = rng.standard_normal((vocab, hidden))
    for i in range(layers):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(hidden)
        t[p + "post_attention_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(hidden)
        t[p + "self_attn.q_proj.weight"] = rng.standard_normal((heads * hd, hidden))
        t[p + "self_attn.k_proj.weight"] = rng.standard_normal((kv * hd, hidden))
        t[p + "self_attn.v_proj.weight"] = rng.standard_normal((kv * hd, hidden))
        t[p + "self_attn.o_proj.weight"] = rng.standard_normal((hidden, heads * hd))
        if bias:
            t[p + "self_attn.q_proj.bias"] = rng.standard_normal(heads * hd)
            t[p + "self_attn.k_proj.bias"] = rng.standard_normal(kv * hd)
            t[p + "self_attn.v_proj.bias"] = rng.standard_normal(kv * hd)
        t[p + "mlp.gate_proj.weight"] = rng.standard_normal((inter, hidden))
        t[p + "mlp.up_proj.weight"] = rng.standard_normal((inter, hidden))
        t[p + "mlp.down_proj.weight"] = rng.standard_normal((hidden, inter))
    t = {k: (0.02 * v).astype(np.float32) for k, v in t.items()}
    cls = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM"}[arch]
    cfg = {"architectures": [cls], "model_type": arch, "hidden_size": hidden, "intermediate_size": inter,
           "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv,
           "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "max_position_embeddings": 4096,
           "vocab_size": vocab, "tie_word_embeddings": tie, "torch_dtype": "bfloat16",
           "bos_token_id": 1, "eos_token_id": 2}
    if arch == "llama":
        cfg["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                               "high_freq_factor": 4.0, "original_max_position_embeddings": 1024}
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg))
    names = sorted(t)
    if shards == 1:
        write_safetensors(d / "model.safetensors", t)
    else:
        weight_map = {}
        for s in range(shards):
            fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
            part = {n: t[n] for n in names[s::shards]}
            write_safetensors(d / fname, part)
            weight_map.update({n: fname for n in part})
        (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    if tokenizer:
        vocab_map = {chr(0x41 + i % 26) + str(i): i for i in range(vocab - 3)}
        tok = {"model": {"type": "BPE", "vocab": vocab_map, "merges": ["A0 B1", ["C2", "D3"]]},
               "pre_tokenizer": {"type": "ByteLevel"},
               "added_tokens": [{"id": vocab - 3, "content": "<s>", "special": True},
                                {"id": vocab - 2, "content": "</s>", "special": True},
                                {"id": vocab - 1, "content": "<tool>", "special": False}]}
        (d / "tokenizer.json").write_text(json.dumps(tok))
        (d / "tokenizer_config.json").write_text(json.dumps(
            {"bos_token": "<s>", "eos_token": {"content": "</s>"}, "chat_template": "{{ messages }}"}))
    return {k: bf16_to_f32(to_bf16_bytes(v)).reshape(v.shape) for k, v in t.items()}


def quantize(build_dir, src, out, qtype, *extra):
    exe = build_dir / "bin" / "aphrodite-quantize"
    r = subprocess.run([str(exe), "--type", qtype, "--threads", "2", *extra, str(src), str(out)],
                       capture_output=True, text=True)
    return r


HF = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
      "output.weight": "lm_head.weight"}
ROLE = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_q": "self_attn.q_proj",
        "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
        "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


def hf_name(g):
    if g in HF:
        return HF[g]
    _, i, role, kind = g.split(".")
    return f"model.layers.{i}.{ROLE[role]}.{kind}"


def permute(w, heads):
    """HF rows -> GGUF rows for adjacent-pair RoPE: GGUF row 2i+j = HF row j*d/2+i."""
    d = w.shape[0] // heads
    idx = []
    for h in range(heads):
        for g in range(d):
            idx.append(h * d + (g % 2) * (d // 2) + g // 2)
    return w[idx]


def check_round_trip(path, src, arch, heads, kv):
    reader = GGUFReader(str(path))
    types = {}
    for t in reader.tensors:
        qt = T(t.tensor_type)
        types[t.name] = qt
        if t.name == "rope_freqs.weight":
            continue
        ref = src[hf_name(t.name)]
        if arch == "llama" and ".attn_q." in t.name:
            ref = permute(ref, heads)
        if arch == "llama" and ".attn_k." in t.name:
            ref = permute(ref, kv)
        got = quants.dequantize(np.asarray(t.data), qt).reshape(ref.shape)
        err = np.sqrt(np.mean((got - ref) ** 2)) / np.sqrt(np.mean(ref ** 2))
        assert err <= BOUNDS[qt] + 1e-12, f"{t.name} {qt.name}: relative RMS error {err:.4f}"
    return reader, types


def field(reader, key):
    return reader.fields[key].contents()


def test_llama_q4_k_m_mix_sharded(tmp_path, build_dir):
    src = make_model(tmp_path / "llama", "llama", 256, 8, 4, 2, 512, 300, tie=False, bias=False, shards=3)
    out = tmp_path / "llama.gguf"
    r = quantize(build_dir, tmp_path / "llama", out, "Q4_K_M")
    assert r.returncode == 0, r.stderr
    reader, types = check_round_trip(out, src, "llama", 4, 2)
    assert types["output.weight"] == T.Q6_K
    assert types["token_embd.weight"] == T.Q4_K
    more_bits = {0, 3, 6, 7}  # first/last eighth and every third in between, 8 layers
    for i in range(8):
        want = T.Q6_K if i in more_bits else T.Q4_K
        assert types[f"blk.{i}.attn_v.weight"] == want, i
        assert types[f"blk.{i}.ffn_down.weight"] == want, i
        for role in ("attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"):
            assert types[f"blk.{i}.{role}.weight"] == T.Q4_K
        assert types[f"blk.{i}.attn_norm.weight"] == T.F32
    assert types["rope_freqs.weight"] == T.F32
    freqs = np.asarray(reader.get_tensor(
        [t.name for t in reader.tensors].index("rope_freqs.weight")).data)
    assert freqs.shape == (32,) and freqs[0] == 1.0 and freqs[-1] == 8.0
    assert field(reader, "general.architecture") == "llama"
    assert field(reader, "general.file_type") == 15
    assert field(reader, "llama.block_count") == 8
    assert field(reader, "llama.attention.head_count_kv") == 2
    assert field(reader, "llama.rope.freq_base") == 500000.0
    assert field(reader, "tokenizer.ggml.model") == "gpt2"
    assert field(reader, "tokenizer.ggml.pre") == "gpt-2"
    toks = field(reader, "tokenizer.ggml.tokens")
    assert len(toks) == 300 and toks[297] == "<s>" and toks[0] == "A0"
    assert field(reader, "tokenizer.ggml.token_type")[297:] == [3, 3, 4]
    assert field(reader, "tokenizer.ggml.merges") == ["A0 B1", "C2 D3"]
    assert field(reader, "tokenizer.ggml.bos_token_id") == 297
    assert field(reader, "tokenizer.ggml.eos_token_id") == 298
    assert field(reader, "tokenizer.chat_template") == "{{ messages }}"


@pytest.mark.parametrize("qtype,expect", [("F16", T.F16), ("Q8_0", T.Q8_0), ("Q4_0", T.Q4_0), ("Q4_1", T.Q4_1),
                                          ("Q4_K", T.Q4_K), ("Q5_K", T.Q5_K), ("Q6_K", T.Q6_K)])
def test_every_scheme_round_trips(tmp_path, build_dir, qtype, expect):
    src = make_model(tmp_path / "m", "llama", 256, 2, 4, 4, 512, 64, tie=False, bias=False)
    out = tmp_path / "m.gguf"
    r = quantize(build_dir, tmp_path / "m", out, qtype)
    assert r.returncode == 0, r.stderr
    _, types = check_round_trip(out, src, "llama", 4, 4)
    matrices = {n for n in types if n.endswith(".weight") and "norm" not in n and "rope" not in n}
    assert {types[n] for n in matrices - {"output.weight"}} == {expect}
    # llama-quant: the output matrix is Q6_K in every quantized scheme but Q8_0.
    assert types["output.weight"] == (expect if expect in (T.F16, T.Q8_0) else T.Q6_K)


def test_q4_1_of_the_smollm2_shape(tmp_path, build_dir, root):
    # SmolLM2-135M's widths (576 hidden, 9 heads, 3 KV heads, 1536 MLP) and
    # tied embedding: the layers Q4_1, the embedding Q6_K falling back to Q8_0
    # (576 is not a multiple of 256), as in the community Q4_1 file.
    src = make_model(tmp_path / "s", "llama", 576, 2, 9, 3, 1536, 96, tie=True, bias=False)
    out = tmp_path / "s.gguf"
    r = quantize(build_dir, tmp_path / "s", out, "Q4_1")
    assert r.returncode == 0, r.stderr
    reader, types = check_round_trip(out, src, "llama", 9, 3)
    assert types["token_embd.weight"] == T.Q8_0
    assert "output.weight" not in types
    for role in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"):
        assert types[f"blk.1.{role}.weight"] == T.Q4_1, role
    assert field(reader, "general.file_type") == 3
    # The community file itself (scripts/fetch-default-model.sh): the same
    # type for every tensor role and the same file_type.
    real = root / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if real.exists():
        ref = GGUFReader(str(real))
        role = lambda name: name.split(".")[-2] if name.startswith("blk.") else name  # noqa: E731
        # (rope_freqs: the test model's llama3 rope scaling, which SmolLM2 lacks)
        ours = {role(n): t for n, t in types.items() if n != "rope_freqs.weight"}
        theirs = {role(t.name): T(t.tensor_type) for t in ref.tensors}
        assert ours == theirs
        assert field(ref, "general.file_type") == 3


def test_permutation_is_exact_in_f16(tmp_path, build_dir):
    src = make_model(tmp_path / "p", "llama", 256, 1, 4, 2, 256, 32, tie=True, bias=False)
    out = tmp_path / "p.gguf"
    assert quantize(build_dir, tmp_path / "p", out, "F16").returncode == 0
    reader = GGUFReader(str(out))
    q = next(t for t in reader.tensors if t.name == "blk.0.attn_q.weight")
    got = np.asarray(q.data).astype(np.float32)
    hf = src["model.layers.0.self_attn.q_proj.weight"].astype(np.float16).astype(np.float32)
    d = 64
    for h in range(4):
        for i in range(d // 2):
            for j in range(2):
                np.testing.assert_array_equal(got[h * d + 2 * i + j], hf[h * d + j * d // 2 + i])


def test_qwen2_biases_tied_and_fallbacks(tmp_path, build_dir):
    # hidden 320 is not a multiple of 256: Q4_K/Q6_K fall back to Q5_0/Q8_0.
    src = make_model(tmp_path / "q", "qwen2", 320, 2, 5, 1, 512, 40, tie=True, bias=True, tokenizer=False)
    out = tmp_path / "q.gguf"
    r = quantize(build_dir, tmp_path / "q", out, "Q4_K_M")
    assert r.returncode == 0, r.stderr
    reader, types = check_round_trip(out, src, "qwen2", 5, 1)
    assert "output.weight" not in types
    assert types["token_embd.weight"] == T.Q8_0  # tied: output-class Q6_K, fallback Q8_0
    assert types["blk.0.attn_q.weight"] == T.Q5_0
    assert types["blk.0.attn_q.bias"] == T.F32
    # 2 layers: use_more_bits picks layer 1 (the last eighth) only.
    assert types["blk.0.ffn_down.weight"] == T.Q4_K  # in_features 512: no fallback
    assert types["blk.1.ffn_down.weight"] == T.Q6_K
    assert field(reader, "general.architecture") == "qwen2"
    # No tokenizer.json: a synthetic byte-level vocabulary of vocab_size.
    assert len(field(reader, "tokenizer.ggml.tokens")) == 40
    assert field(reader, "tokenizer.ggml.tokens")[ord("!")] == "!"
    assert field(reader, "tokenizer.ggml.tokens")[0] == "\u0100"  # GPT-2 byte map


def test_vocab_from_real_gguf(tmp_path, build_dir, root):
    real = root / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not real.exists():
        pytest.skip("run scripts/fetch-default-model.sh")
    make_model(tmp_path / "v", "llama", 256, 1, 4, 2, 256, 49152, tie=True, bias=False, tokenizer=False)
    out = tmp_path / "v.gguf"
    r = quantize(build_dir, tmp_path / "v", out, "Q8_0", "--vocab-from", str(real))
    assert r.returncode == 0, r.stderr
    a, b = GGUFReader(str(out)), GGUFReader(str(real))
    for key in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type",
                "tokenizer.ggml.pre", "tokenizer.chat_template", "tokenizer.ggml.eos_token_id"):
        assert field(a, key) == field(b, key), key
        assert a.fields[key].types == b.fields[key].types, key


def test_bad_inputs_fail_cleanly(tmp_path, build_dir):
    (tmp_path / "empty").mkdir()
    out = tmp_path / "x.gguf"
    r = quantize(build_dir, tmp_path / "empty", out, "Q4_K_M")
    assert r.returncode != 0 and "config.json" in r.stderr and not out.exists()
    make_model(tmp_path / "m", "llama", 256, 1, 4, 2, 256, 32, tie=True, bias=False)
    r = quantize(build_dir, tmp_path / "m", out, "Q3_K")
    assert r.returncode != 0 and "Q3_K" in r.stderr
