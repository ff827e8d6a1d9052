// A dense tensor on the CPU or one CUDA device: shape, dtype, contiguous
// row-major storage that is shared (views keep their storage alive).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "aphrodite/plugin.h"

namespace aph {

size_t dtype_size(aph_dtype dtype);
const char* dtype_name(aph_dtype dtype);

// Device memory; CPU memory is 64-byte aligned. Throws aph::Error on failure.
class Storage {
 public:
  Storage(int32_t device, size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  int32_t device() const { return device_; }

 private:
  int32_t device_;
  size_t bytes_;
  void* data_ = nullptr;
};

class Tensor {
 public:
  Tensor() = default;
  static Tensor empty(std::vector<int64_t> shape, aph_dtype dtype, int32_t device);
  static Tensor zeros(std::vector<int64_t> shape, aph_dtype dtype, int32_t device);
  // Wraps memory someone else owns (e.g. a memory-mapped weight).
  static Tensor borrow(void* data, std::vector<int64_t> shape, aph_dtype dtype, int32_t device);

  bool defined() const { return data_ != nullptr; }
  void* data() const { return data_; }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }
  aph_dtype dtype() const { return dtype_; }
  int32_t device() const { return device_; }
  bool on_cpu() const { return device_ == APH_DEVICE_CPU; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_.at(i < 0 ? shape_.size() + i : i); }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const;
  size_t nbytes() const { return numel() * dtype_size(dtype_); }

  // Same storage, new shape with the same element count.
  Tensor reshape(std::vector<int64_t> shape) const;
  // Rows [begin, end) of the outermost dimension, sharing storage.
  Tensor rows(int64_t begin, int64_t end) const;
  // A copy on another device (synchronous).
  Tensor to(int32_t device) const;
  // The ABI view (contiguous strides).
  aph_tensor view() const;
  std::string describe() const;

 private:
  std::shared_ptr<Storage> storage_;
  void* data_ = nullptr;
  aph_dtype dtype_ = APH_DTYPE_F32;
  int32_t device_ = APH_DEVICE_CPU;
  std::vector<int64_t> shape_;
};

// Copies bytes between any two devices (synchronous).
void copy_bytes(void* dst, int32_t dst_device, const void* src, int32_t src_device, size_t bytes);

}  // namespace aph
