// The GGUF container (FORMATS.md §1): header, metadata, tensor table, aligned
// memory-mapped data, split files. Shared by the plugin and by test tools.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace aph::gguf {

struct TensorInfo {
  std::string name;
  uint32_t type = 0;          // ggml type id
  std::vector<uint64_t> ne;   // ggml order: ne[0] is the fastest-varying dimension
  uint64_t offset = 0;        // relative to its file's data section
  const uint8_t* data = nullptr;  // inside the mapping
  uint64_t nbytes = 0;
  uint32_t file_index = 0;    // which split file holds it
};

class GgufFile {
 public:
  virtual ~GgufFile() = default;
  // Opens and validates a .gguf (and, for "*-00001-of-0000N.gguf", every split).
  // Throws aph::Error naming the file and the key or tensor at fault.
  static std::unique_ptr<GgufFile> open(const std::string& path);

  virtual uint32_t version() const = 0;
  // Every metadata key: integers and floats as JSON numbers (u64 stays
  // unsigned), bools, strings, arrays (nested arrays too).
  virtual const boost::json::object& metadata() const = 0;
  virtual const std::vector<TensorInfo>& tensors() const = 0;
  virtual const TensorInfo* find(std::string_view name) const = 0;
};

}  // namespace aph::gguf
