// A read-only memory-mapped file. Model weights are mapped, never copied, so
// a 5 GB checkpoint costs page cache, not heap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace aph {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws aph::Error naming the path
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace aph
