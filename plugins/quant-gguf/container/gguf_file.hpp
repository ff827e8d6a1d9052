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

// GGUF metadata value types (FORMATS.md §1.1).
enum ValueType : uint32_t {
  kVU8 = 0, kVI8 = 1, kVU16 = 2, kVI16 = 3, kVU32 = 4, kVI32 = 5, kVF32 = 6, kVBool = 7,
  kVString = 8, kVArray = 9, kVU64 = 10, kVI64 = 11, kVF64 = 12,
};

// How a key was stored, so a writer can copy it with the same types.
struct KeyType {
  ValueType type = kVU8;
  ValueType element = kVU8;  // for arrays: the element type
};

class GgufFile {
 public:
  virtual ~GgufFile() = default;
  // Opens and validates a .gguf (and, for "*-00001-of-0000N.gguf", every split).
  // Throws aph::Error naming the file and the key or tensor at fault.
  static std::unique_ptr<GgufFile> open(const std::string& path);
  // Parses one GGUF held in memory that the caller keeps alive (tests,
  // fuzzing); `name` appears in error messages. Split keys are not followed.
  static std::unique_ptr<GgufFile> parse(const uint8_t* data, size_t size,
                                         const std::string& name);

  virtual uint32_t version() const = 0;
  // Every metadata key: integers and floats as JSON numbers (u64 stays
  // unsigned), bools, strings, arrays (nested arrays too).
  virtual const boost::json::object& metadata() const = 0;
  virtual const std::vector<TensorInfo>& tensors() const = 0;
  virtual const TensorInfo* find(std::string_view name) const = 0;
  // nullptr when the key is absent.
  virtual const KeyType* key_type(std::string_view key) const = 0;
  virtual uint32_t alignment() const = 0;
  // The path given to open() (the first split), or parse()'s name.
  virtual const std::string& path() const = 0;
};

}  // namespace aph::gguf
