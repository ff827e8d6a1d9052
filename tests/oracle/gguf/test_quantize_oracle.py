"""The plugin's quantizers: legacy types byte-identical to gguf.quants.quantize;
K-quants decoded by gguf.quants.dequantize within per-type error bounds."""
import numpy as np
import pytest
from gguf import GGMLQuantizationType as T, GGML_QUANT_SIZES
from gguf import quants


def sample(rng, rows=64, cols=512):
    scale = np.exp(rng.uniform(-5, 2, (rows, 1)))
    x = (rng.standard_normal((rows, cols)) * scale).astype(np.float32)
    x[1] = 0.0
    x[2, ::7] *= 40.0  # outliers
    return x


def nbytes(qtype, n):
    block, size = GGML_QUANT_SIZES[qtype]
    return n // block * size


@pytest.mark.parametrize("qtype", [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.F16, T.BF16],
                         ids=lambda t: t.name)
def test_legacy_types_byte_identical(oracle, qtype):
    x = sample(np.random.default_rng(int(qtype)))
    ref = np.ascontiguousarray(quants.quantize(x, qtype)).view(np.uint8).reshape(-1)
    got = oracle.quantize(int(qtype), x, nbytes(qtype, x.size))
    diff = np.flatnonzero(ref != got)
    assert diff.size == 0, f"{qtype.name}: {diff.size} bytes differ, first at {diff[0]}"


# Relative RMS error bounds for Gaussian rows (per row, worst row).
K_BOUNDS = {T.Q4_K: 0.10, T.Q5_K: 0.05, T.Q6_K: 0.025}


@pytest.mark.parametrize("qtype", list(K_BOUNDS), ids=lambda t: t.name)
def test_k_quants_round_trip(oracle, qtype):
    x = sample(np.random.default_rng(10 + int(qtype)))
    q = oracle.quantize(int(qtype), x, nbytes(qtype, x.size))
    y = quants.dequantize(q.reshape(x.shape[0], -1), qtype).reshape(x.shape)
    assert np.all(y[1] == 0)
    rows = [r for r in range(x.shape[0]) if r not in (1, 2)]
    err = np.sqrt(np.mean((y[rows] - x[rows]) ** 2, axis=1)) / np.sqrt(np.mean(x[rows] ** 2, axis=1))
    assert err.max() < K_BOUNDS[qtype], f"{qtype.name}: worst relative RMS error {err.max():.4f}"
    # The plugin's own decoder agrees with the oracle on these blocks too.
    np.testing.assert_array_equal(oracle.dequantize(int(qtype), q, x.size), y.reshape(-1))
