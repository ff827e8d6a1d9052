// C entry points for tests/oracle/gguf/*.py (ctypes). Errors come back as a
// non-zero status and a message, like every other boundary.
#include <cstdint>
#include <cstring>
#include <string>

#include <boost/json.hpp>

#include "core/common/error.hpp"
#include "plugins/quant-gguf/container/ggml_types.hpp"
#include "plugins/quant-gguf/container/gguf_file.hpp"
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

// The container's view of a file as JSON: version, metadata, tensor table.
// Returns the bytes needed (including the NUL); writes when buf_len allows.
// Errors: returns 0 and writes the message into buf.
__attribute__((visibility("default"))) uint64_t aph_gguf_oracle_describe(const char* path, char* buf,
                                                                          uint64_t buf_len) {
  std::string out;
  aph_error err{};
  aph_status st = aph::guard(&err, [&] {
    auto f = aph::gguf::GgufFile::open(path);
    boost::json::object o;
    o["version"] = f->version();
    o["alignment"] = f->alignment();
    o["metadata"] = f->metadata();
    boost::json::array tensors;
    for (const auto& t : f->tensors()) {
      boost::json::object jt;
      jt["name"] = t.name;
      jt["type"] = t.type;
      jt["ne"] = boost::json::value_from(t.ne);
      jt["offset"] = t.offset;
      jt["nbytes"] = t.nbytes;
      tensors.push_back(std::move(jt));
    }
    o["tensors"] = std::move(tensors);
    out = boost::json::serialize(o);
  });
  if (st != APH_OK) {
    if (buf && buf_len > 0) {
      std::strncpy(buf, err.message, buf_len - 1);
      buf[buf_len - 1] = '\0';
    }
    return 0;
  }
  if (buf && buf_len > out.size()) std::memcpy(buf, out.c_str(), out.size() + 1);
  return out.size() + 1;
}
}
