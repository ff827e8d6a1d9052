"""Reference fixtures from HF transformers (run where torch and transformers
are installed: the GPU machine has them; with --gguf also `gguf` and
`accelerate`. Everything runs on the CPU, in float32; no network needed).
The committed hf_gguf fixture was made on the development machine in a
scratch venv (pip install torch transformers gguf accelerate).

  python tests/oracle/model/make_reference.py [--out tests/oracle/model/fixtures]
      [--gguf models/SmolLM2-135M-Instruct.Q4_1.gguf]

1. For every model shape in numpy_llama.MODELS (GQA ratios, odd vocab sizes,
   tied/untied, each rope scaling, Qwen2 bias, Mistral): builds the model with
   random weights through transformers itself, saves it (config.json +
   model.safetensors, bf16 weights so the fixtures stay small), reloads it in
   float32 with eager attention and writes the logits of a fixed prompt and a
   64-token greedy continuation to fixtures/hf/<name>/ (format: see
   numpy_llama.py).
2. With --gguf: transformers loads the real GGUF (gguf_file=..., dequantized
   to float32) and writes the last-position logits of a fixed prompt and a
   32-token greedy continuation to fixtures/hf_gguf/<stem>/.

The C++ oracle tests pick up every fixture directory; commit the output.
"""
import argparse
import json
import os
import sys
import traceback

import numpy as np
import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import numpy_llama  # noqa: E402  (the model shapes)

GREEDY_STEPS = 64
GGUF_PROMPT = "The capital of France is"


def greedy(model, prompt, steps):
    seq, out, margins = list(prompt), [], []
    with torch.no_grad():
        all_logits = model(torch.tensor([seq])).logits[0].double()
        last = all_logits[-1]
        for _ in range(steps):
            top = torch.topk(last, 2)
            out.append(int(top.indices[0]))
            margins.append(float(top.values[0] - top.values[1]))
            seq.append(out[-1])
            last = model(torch.tensor([seq])).logits[0, -1].double()
    return all_logits.float().numpy(), out, margins


def write_reference(d, prompt, logits, ids, margins, vocab, extra=None):
    np.ascontiguousarray(logits, dtype="<f4").tofile(os.path.join(d, "logits.f32"))
    ref = {"source": f"transformers {transformers.__version__}", "prompt_ids": [int(x) for x in prompt],
           "greedy_ids": ids, "greedy_margins": margins, "vocab_size": int(vocab)}
    ref.update(extra or {})
    with open(os.path.join(d, "reference.json"), "w") as f:
        json.dump(ref, f)


def random_models(out_root):
    """Returns the names that failed (each one's traceback is printed)."""
    failed = []
    for i, (name, (cfg, _dtype)) in enumerate(sorted(numpy_llama.MODELS.items())):
        try:
            random_model(out_root, i, name, cfg)
        except Exception:  # one model's failure must not cost the others (device time is scarce)
            traceback.print_exc()
            failed.append(name)
    return failed


def random_model(out_root, i, name, cfg):
    d = os.path.join(out_root, "hf", name)
    os.makedirs(d, exist_ok=True)
    clean = {k: v for k, v in cfg.items() if v is not None}
    clean["torch_dtype"] = "bfloat16"
    config = AutoConfig.for_model(clean["model_type"], **{k: v for k, v in clean.items() if k != "model_type"})
    torch.manual_seed(4321 + i)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    # Larger-than-default weights so the logits spread (init std 0.02 makes them near-flat).
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if pname.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif "embed_tokens" in pname:
                p.copy_(torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) / p.shape[-1] ** 0.5 * (0.5 if pname.endswith("bias") else 1.0))
    model.to(torch.bfloat16).save_pretrained(d, safe_serialization=True)
    ref_model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager")
    ref_model.eval()
    rng = np.random.default_rng(99 + i)
    prompt = [int(x) for x in rng.integers(0, cfg["vocab_size"], numpy_llama.PROMPT_LEN)]
    steps, extra = GREEDY_STEPS, {}
    rs = cfg.get("rope_scaling") or {}
    if rs.get("rope_type") == "longrope":
        # transformers switches short -> long factors once the sequence outgrows the
        # original context (recomputing every position); a KV-cached engine fixes one
        # choice per served context. Stay inside it and serve that context.
        l0 = rs["original_max_position_embeddings"]
        steps, extra = l0 - len(prompt), {"max_model_len": l0}
    logits, ids, margins = greedy(ref_model, prompt, steps)
    for f in os.listdir(d):  # keep only what the C++ side reads
        if f not in ("config.json", "model.safetensors", "generation_config.json"):
            os.remove(os.path.join(d, f))
    write_reference(d, prompt, logits, ids, margins, cfg["vocab_size"], extra)
    print("wrote", d, flush=True)


def gguf_model(out_root, gguf_path):
    from transformers import AutoTokenizer
    folder, fname = os.path.split(os.path.abspath(gguf_path))
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=fname)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=fname, dtype=torch.float32,
                                                 attn_implementation="eager")
    model.eval()
    prompt = tok(GGUF_PROMPT)["input_ids"]
    logits, ids, margins = greedy(model, prompt, 32)
    stem = os.path.splitext(fname)[0].replace(".", "_").replace("-", "_").lower()
    d = os.path.join(out_root, "hf_gguf", stem)
    os.makedirs(d, exist_ok=True)
    # Only the last row: the vocabulary is large.
    write_reference(d, prompt, logits[-1:], ids, margins, logits.shape[-1],
                    {"model_file": os.path.relpath(os.path.abspath(gguf_path), os.path.join(HERE, "..", "..", "..")),
                     "logits_last_only": True, "prompt_text": GGUF_PROMPT})
    print("wrote", d, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "fixtures"))
    ap.add_argument("--gguf", default=None)
    ap.add_argument("--skip-random", action="store_true")
    a = ap.parse_args()
    failed = [] if a.skip_random else random_models(a.out)
    if a.gguf:
        gguf_model(a.out, a.gguf)
    if failed:
        sys.exit("failed: " + ", ".join(failed))


if __name__ == "__main__":
    main()
