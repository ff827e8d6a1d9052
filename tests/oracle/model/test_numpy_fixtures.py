"""The committed NumPy fixtures are what numpy_llama.py produces, and the
NumPy reference itself agrees with two facts checked by hand."""
import json
import os

import numpy as np

import numpy_llama as ref

HERE = os.path.dirname(os.path.abspath(__file__))


def test_regenerated_fixture_matches_committed(tmp_path):
    names = sorted(ref.MODELS)
    for i, name in enumerate(names):
        if name not in ("llama_gqa2", "qwen2_bias_tied"):
            continue
        cfg, dtype = ref.MODELS[name]
        d = ref.make_fixture(str(tmp_path), name, cfg, dtype, seed=1234 + i, greedy_steps=3)
        committed = os.path.join(HERE, "fixtures", "numpy", name)
        for f in ("model.safetensors", "logits.f32"):
            with open(os.path.join(d, f), "rb") as a, open(os.path.join(committed, f), "rb") as b:
                assert a.read() == b.read(), f"{name}/{f} differs from a fresh run"
        new = json.load(open(os.path.join(d, "reference.json")))
        old = json.load(open(os.path.join(committed, "reference.json")))
        assert new["prompt_ids"] == old["prompt_ids"]
        assert new["greedy_ids"] == old["greedy_ids"][:3]


def test_rope_rotates_by_position_times_frequency():
    cfg = ref.base_config()
    inv, scale = ref.inv_freq_table(cfg, 256)
    assert scale == 1.0
    x = np.zeros((1, 1, 64))
    x[0, 0, 0] = 1.0  # pair (0, 32) in NEOX order
    y = ref.rope(x, np.array([3]), inv, scale)
    assert np.isclose(y[0, 0, 0], np.cos(3 * inv[0])) and np.isclose(y[0, 0, 32], np.sin(3 * inv[0]))


def test_llama3_keeps_high_and_divides_low_frequencies():
    cfg, _ = ref.MODELS["llama3_rope"]
    base, _ = ref.inv_freq_table(dict(cfg, rope_scaling=None), 256)
    inv, _ = ref.inv_freq_table(cfg, 256)
    assert np.isclose(inv[0], base[0])
    assert np.isclose(inv[-1], base[-1] / 8.0)
