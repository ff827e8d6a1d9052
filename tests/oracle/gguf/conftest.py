import ctypes
import os
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(os.environ.get("APH_SOURCE_DIR", Path(__file__).resolve().parents[3]))
BUILD = Path(os.environ.get("APH_BUILD_DIR", ROOT / "build"))


class Oracle:
    """The plugin's CPU decoding, loaded from the test-only shared library."""

    def __init__(self, path: Path):
        self.lib = ctypes.CDLL(str(path))
        f = self.lib.aph_gguf_oracle_dequantize
        f.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p,
                      ctypes.c_uint64, ctypes.c_char_p, ctypes.c_uint64]
        f.restype = ctypes.c_int
        g = self.lib.aph_gguf_oracle_quantize
        g.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p,
                      ctypes.c_uint64, ctypes.c_char_p, ctypes.c_uint64]
        g.restype = ctypes.c_int

    def describe(self, path) -> dict:
        import json
        f = self.lib.aph_gguf_oracle_describe
        f.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint64]
        f.restype = ctypes.c_uint64
        probe = ctypes.create_string_buffer(1024)
        need = f(str(path).encode(), probe, 0)
        if need == 0:
            f(str(path).encode(), probe, 1024)
            raise RuntimeError(probe.value.decode())
        buf = ctypes.create_string_buffer(need)
        f(str(path).encode(), buf, need)
        return json.loads(buf.raw[:need - 1].decode("utf-8"))

    def quantize(self, qtype: int, x: np.ndarray, nbytes: int) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
        out = np.empty(nbytes, dtype=np.uint8)
        msg = ctypes.create_string_buffer(1024)
        st = self.lib.aph_gguf_oracle_quantize(qtype, x.ctypes.data, x.size, out.ctypes.data,
                                               nbytes, msg, 1024)
        if st != 0:
            raise RuntimeError(msg.value.decode())
        return out

    def dequantize(self, qtype: int, data: np.ndarray, n: int) -> np.ndarray:
        data = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        out = np.empty(n, dtype=np.float32)
        msg = ctypes.create_string_buffer(1024)
        st = self.lib.aph_gguf_oracle_dequantize(qtype, data.ctypes.data, data.size,
                                                 out.ctypes.data, n, msg, 1024)
        if st != 0:
            raise RuntimeError(msg.value.decode())
        return out


@pytest.fixture(scope="session")
def oracle() -> Oracle:
    path = BUILD / "lib" / "libaph_gguf_oracle.so"
    if not path.exists():
        pytest.fail(f"{path} is missing: build target aph_gguf_oracle first")
    return Oracle(path)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def build_dir() -> Path:
    return BUILD
