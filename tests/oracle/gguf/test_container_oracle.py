"""The container parser against gguf.GGUFReader on real files: the vocab
fixtures (every tokenizer family) and the SmolLM2 model. Every key's value and
type-width-independent contents, and every tensor's type, shape and offset,
must agree."""
import math
from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFReader


def real_files(root):
    files = sorted((root.parent / "shared" / "fixtures" / "vocab").glob("*.gguf"))
    model = root / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if model.exists():
        files.append(model)
    return files


def same(a, b):
    if isinstance(b, float) or isinstance(a, float):
        return math.isclose(float(a), float(b), rel_tol=0, abs_tol=0) or (math.isnan(a) and math.isnan(b))
    if isinstance(b, list):
        return isinstance(a, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def test_real_files_agree_with_gguf_reader(oracle, root):
    files = real_files(root)
    if not files:
        pytest.skip("no GGUF fixtures found")
    for path in files:
        mine = oracle.describe(path)
        ref = GGUFReader(str(path))
        keys = [k for k in ref.fields if not k.startswith("GGUF.")]
        assert sorted(keys) == sorted(mine["metadata"]), path.name
        for k in keys:
            want = ref.fields[k].contents()
            got = mine["metadata"][k]
            if isinstance(want, float):  # stored as f32: the JSON double is exact
                want = float(np.float32(want))
            if isinstance(want, list) and want and isinstance(want[0], float):
                ok = np.array_equal(np.asarray(got, np.float64), np.asarray(want, np.float64))
            elif isinstance(want, list) and want and not isinstance(want[0], list):
                ok = got == want
            else:
                ok = same(got, want)
            assert ok, f"{path.name}: key {k}: {str(got)[:80]} != {str(want)[:80]}"
        assert len(mine["tensors"]) == len(ref.tensors), path.name
        for t_mine, t_ref in zip(mine["tensors"], ref.tensors):
            assert t_mine["name"] == t_ref.name
            assert t_mine["type"] == int(t_ref.tensor_type)
            assert t_mine["ne"] == [int(x) for x in t_ref.shape]
            assert t_mine["nbytes"] == int(t_ref.n_bytes)
            assert t_mine["offset"] == int(t_ref.data_offset) - int(ref.tensors[0].data_offset) + mine["tensors"][0]["offset"]


def test_open_errors_name_the_file(oracle, tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 8)
    with pytest.raises(RuntimeError, match="bad.gguf"):
        oracle.describe(bad)
