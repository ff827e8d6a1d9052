// C entry points for tests/oracle/gguf/*.py (ctypes). Errors come back as a
// non-zero status and a message, like every other boundary.
#include <cstdint>
#include <cstring>

#include "core/common/error.hpp"
#include "plugins/quant-gguf/container/ggml_types.hpp"
#include "plugins/quant-gguf/cpu/dequant.hpp"
#include "plugins/quant-gguf/cpu/quantize.hpp"

extern "C" {

__attribute__((visibility("default"))) int aph_gguf_oracle_dequantize(
    uint32_t type, const uint8_t* src, uint64_t nbytes, float* dst, uint64_t n, char* msg,
    uint64_t msg_len) {
  aph_error err{};
  aph_status st = aph::guard(&err, [&] {
    auto t = aph::gguf::type_traits(type);
    if (!t) throw aph::invalid_argument("unknown type");
    if (n % t->block_elems != 0 || n / t->block_elems * t->block_bytes != nbytes)
      throw aph::invalid_argument("size mismatch");
    aph::gguf::dequantize_row(type, src, dst, static_cast<int64_t>(n));
  });
  if (st != APH_OK && msg && msg_len > 0) {
    std::strncpy(msg, err.message, msg_len - 1);
    msg[msg_len - 1] = '\0';
  }
  return st;
}

__attribute__((visibility("default"))) int aph_gguf_oracle_quantize(uint32_t type, const float* src,
                                                                     uint64_t n, uint8_t* dst,
                                                                     uint64_t nbytes, char* msg,
                                                                     uint64_t msg_len) {
  aph_error err{};
  aph_status st = aph::guard(&err, [&] {
    auto t = aph::gguf::type_traits(type);
    if (!t) throw aph::invalid_argument("unknown type");
    if (n % t->block_elems != 0 || n / t->block_elems * t->block_bytes != nbytes)
      throw aph::invalid_argument("size mismatch");
    aph::gguf::quantize_row(type, src, dst, static_cast<int64_t>(n));
  });
  if (st != APH_OK && msg && msg_len > 0) {
    std::strncpy(msg, err.message, msg_len - 1);
    msg[msg_len - 1] = '\0';
  }
  return st;
}
}
