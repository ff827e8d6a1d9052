// One memory-mapped .safetensors file with a fully validated header: every
// tensor's dtype, shape and byte range are checked against the file before any
// byte of it is used, so a truncated or lying file is an error, not a crash.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "aphrodite/plugin.h"
#include "core/common/mapped_file.hpp"

namespace aph::weights {

struct StoredTensor {
  std::string name;
  std::string dtype_name;  // as written in the header ("BF16", "F8_E4M3", ...)
  int32_t dtype = -1;      // aph_dtype, or -1 for types the host does not compute in (U16, F4, ...)
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  uint64_t nbytes = 0;
  std::string file;  // the file it lives in, for messages
  int64_t numel() const;
};

class SafetensorsFile {
 public:
  // Maps and validates `path`. Throws aph::Error naming the file (and tensor).
  explicit SafetensorsFile(const std::string& path);
  // Validates an in-memory image (the fuzzer's entry point); `bytes` must
  // outlive the object.
  SafetensorsFile(const uint8_t* bytes, size_t size, const std::string& label);

  const std::string& path() const { return path_; }
  const std::map<std::string, StoredTensor>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  void parse(const uint8_t* bytes, size_t size);
  std::string path_;
  std::unique_ptr<MappedFile> map_;
  std::map<std::string, StoredTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Bits per element of a safetensors dtype name; 0 when unknown.
int safetensors_dtype_bits(const std::string& name);
// The aph_dtype of a safetensors dtype name, or -1.
int32_t safetensors_dtype_to_aph(const std::string& name);

}  // namespace aph::weights
