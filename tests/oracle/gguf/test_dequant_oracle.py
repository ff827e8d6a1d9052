"""The plugin's CPU dequantization against gguf.quants.dequantize (the PyPI
package is the oracle): quantized random data, random-but-valid blocks for
every type, and the real SmolLM2 file's tensors."""
import numpy as np
import pytest
from gguf import GGMLQuantizationType as T, GGML_QUANT_SIZES, GGUFReader
from gguf import quants

TYPES = [T.F32, T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q2_K, T.Q3_K,
         T.Q4_K, T.Q5_K, T.Q6_K, T.IQ4_NL, T.IQ4_XS]

# Byte ranges of the fp16 scale fields in each block (FORMATS.md §2.2); they
# must hold finite values for a block to be valid.
F16_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
    T.IQ4_NL: [0], T.IQ4_XS: [0],
}


def finite_f16(rng, n):
    return (rng.standard_normal(n) * 10.0 ** rng.uniform(-4, 1, n)).astype(np.float16)


def random_blocks(rng, qtype, n_blocks):
    block, size = GGML_QUANT_SIZES[qtype]
    n = n_blocks * block
    if qtype == T.F32:
        return rng.standard_normal(n).astype(np.float32).view(np.uint8), n
    if qtype == T.F16:
        return finite_f16(rng, n).view(np.uint8), n
    if qtype == T.BF16:
        bits = rng.integers(0, 1 << 16, n, dtype=np.uint32).astype(np.uint16)
        bits[(bits & 0x7F80) == 0x7F80] &= 0xBFFF  # no inf/NaN exponents
        return bits.view(np.uint8), n
    raw = rng.integers(0, 256, (n_blocks, size), dtype=np.uint8)
    for off in F16_FIELDS[qtype]:
        raw[:, off:off + 2] = finite_f16(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
    return raw.reshape(-1), n


def check(oracle, qtype, data, n):
    ref = quants.dequantize(data.reshape(1, -1), qtype).reshape(-1).astype(np.float32)
    got = oracle.dequantize(int(qtype), data, n)
    assert ref.shape == got.shape
    bad = np.flatnonzero(~((ref == got) | (np.isnan(ref) & np.isnan(got))))
    assert bad.size == 0, f"{qtype.name}: {bad.size} of {n} differ, first at {bad[0]}: " \
                          f"ref {ref[bad[0]]!r} got {got[bad[0]]!r}"


@pytest.mark.parametrize("qtype", TYPES, ids=lambda t: t.name)
def test_random_valid_blocks(oracle, qtype):
    rng = np.random.default_rng(int(qtype) + 1)
    data, n = random_blocks(rng, qtype, 2000 if GGML_QUANT_SIZES[qtype][0] > 1 else 1)
    if GGML_QUANT_SIZES[qtype][0] == 1:
        data, n = random_blocks(rng, qtype, 64000)
    check(oracle, qtype, data, n)


QUANTIZABLE = [T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0]


@pytest.mark.parametrize("qtype", QUANTIZABLE, ids=lambda t: t.name)
def test_quantized_random_data(oracle, qtype):
    rng = np.random.default_rng(100 + int(qtype))
    x = (rng.standard_normal((64, 256)) * np.exp(rng.uniform(-6, 3, (64, 1)))).astype(np.float32)
    x[3] = 0.0  # all-zero blocks take the d == 0 branch
    q = quants.quantize(x, qtype)
    check(oracle, qtype, np.ascontiguousarray(q).view(np.uint8).reshape(-1), x.size)


def test_real_smollm2_every_tensor(oracle, root):
    path = root / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.exists():
        pytest.skip("run scripts/fetch-default-model.sh")
    reader = GGUFReader(str(path))
    seen = set()
    for t in reader.tensors:
        n = int(np.prod(t.shape))
        check(oracle, T(t.tensor_type), np.asarray(t.data).view(np.uint8).reshape(-1), n)
        seen.add(T(t.tensor_type))
    assert {T.Q4_1, T.Q8_0, T.F32} <= seen


def test_unsupported_type_is_an_error(oracle):
    block, size = GGML_QUANT_SIZES[T.IQ2_XXS]
    with pytest.raises(RuntimeError, match="IQ2_XXS"):
        oracle.dequantize(int(T.IQ2_XXS), np.zeros(size, np.uint8), block)
