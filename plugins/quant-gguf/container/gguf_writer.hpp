// Builds GGUF v3 files: metadata with explicit value types, a tensor table laid
// out back to back at the alignment, then the data. The header is produced
// first so a caller can write tensor data at known offsets (from threads).
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "plugins/quant-gguf/container/gguf_file.hpp"

namespace aph::gguf {

class GgufWriter {
 public:
  explicit GgufWriter(uint32_t alignment = 32);

  // `value` must fit `type` (for arrays, `type.element` names the element type;
  // nested arrays are written as arrays of arrays of that element type).
  void add_kv(const std::string& key, KeyType type, const boost::json::value& value);
  void add_u32(const std::string& key, uint32_t v) { add_kv(key, {kVU32, kVU8}, v); }
  void add_f32(const std::string& key, float v) { add_kv(key, {kVF32, kVU8}, v); }
  void add_bool(const std::string& key, bool v) { add_kv(key, {kVBool, kVU8}, v); }
  void add_string(const std::string& key, const std::string& v) {
    add_kv(key, {kVString, kVU8}, boost::json::string(v));
  }

  // ne in ggml order. Returns the tensor's offset within the data section.
  uint64_t add_tensor(const std::string& name, uint32_t ggml_type, const std::vector<uint64_t>& ne);

  // Everything before the data section, padded to the alignment.
  std::vector<uint8_t> header() const;
  // Bytes of the data section (tensors and their padding).
  uint64_t data_bytes() const { return data_bytes_; }
  uint64_t tensor_offset(size_t i) const { return tensors_.at(i).offset; }
  uint64_t tensor_bytes(size_t i) const { return tensors_.at(i).nbytes; }
  size_t tensor_count() const { return tensors_.size(); }

  // A whole file in memory (tests): header, then each tensor's bytes in order.
  std::vector<uint8_t> to_bytes(const std::vector<std::vector<uint8_t>>& tensor_data) const;

 private:
  struct Tensor {
    std::string name;
    uint32_t type;
    std::vector<uint64_t> ne;
    uint64_t offset;
    uint64_t nbytes;
  };
  uint32_t alignment_;
  std::vector<uint8_t> kv_;  // serialized key/value pairs
  uint64_t n_kv_ = 0;
  std::vector<Tensor> tensors_;
  uint64_t data_bytes_ = 0;
};

// Bytes of a tensor of `ggml_type` with ggml shape `ne`; throws for unknown
// types or a ne[0] that is not a multiple of the block size.
uint64_t tensor_nbytes(uint32_t ggml_type, const std::vector<uint64_t>& ne);

}  // namespace aph::gguf
