#include "core/common/tensor.hpp"

#include <cstdlib>
#include <cstring>
#include <numeric>
#include <sstream>

#include "core/common/error.hpp"

#ifdef APH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace aph {

size_t dtype_size(aph_dtype dtype) {
  switch (dtype) {
    case APH_DTYPE_F32: case APH_DTYPE_I32: case APH_DTYPE_U32: return 4;
    case APH_DTYPE_F16: case APH_DTYPE_BF16: case APH_DTYPE_I16: return 2;
    case APH_DTYPE_I64: case APH_DTYPE_F64: return 8;
    case APH_DTYPE_U8: case APH_DTYPE_I8: case APH_DTYPE_F8_E4M3: case APH_DTYPE_F8_E5M2: return 1;
  }
  throw Error(APH_ERR_INVALID_ARGUMENT, "unknown dtype " + std::to_string(static_cast<int>(dtype)));
}

const char* dtype_name(aph_dtype dtype) {
  switch (dtype) {
    case APH_DTYPE_F32: return "f32";
    case APH_DTYPE_F16: return "f16";
    case APH_DTYPE_BF16: return "bf16";
    case APH_DTYPE_I32: return "i32";
    case APH_DTYPE_I64: return "i64";
    case APH_DTYPE_U8: return "u8";
    case APH_DTYPE_I8: return "i8";
    case APH_DTYPE_F8_E4M3: return "f8_e4m3";
    case APH_DTYPE_F8_E5M2: return "f8_e5m2";
    case APH_DTYPE_U32: return "u32";
    case APH_DTYPE_I16: return "i16";
    case APH_DTYPE_F64: return "f64";
  }
  return "?";
}

#ifdef APH_HAVE_CUDA
static void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(APH_ERR_DEVICE, std::string(what) + ": " + cudaGetErrorString(e));
}
#endif

Storage::Storage(int32_t device, size_t bytes) : device_(device), bytes_(bytes) {
  size_t alloc = bytes == 0 ? 64 : bytes;
  if (device == APH_DEVICE_CPU) {
    data_ = std::aligned_alloc(64, (alloc + 63) / 64 * 64);
    if (data_ == nullptr) throw Error(APH_ERR_OUT_OF_MEMORY, "cannot allocate " + std::to_string(bytes) + " bytes of host memory");
    return;
  }
#ifdef APH_HAVE_CUDA
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  cudaError_t e = cudaMalloc(&data_, alloc);
  if (e != cudaSuccess) {
    throw Error(APH_ERR_OUT_OF_MEMORY, "cannot allocate " + std::to_string(bytes) +
                                           " bytes on cuda:" + std::to_string(device) + ": " +
                                           cudaGetErrorString(e));
  }
#else
  throw Error(APH_ERR_UNSUPPORTED, "this build has no CUDA support");
#endif
}

Storage::~Storage() {
  if (data_ == nullptr) return;
  if (device_ == APH_DEVICE_CPU) {
    std::free(data_);
    return;
  }
#ifdef APH_HAVE_CUDA
  cudaFree(data_);
#endif
}

void copy_bytes(void* dst, int32_t dst_device, const void* src, int32_t src_device, size_t bytes) {
  if (bytes == 0) return;
  if (dst_device == APH_DEVICE_CPU && src_device == APH_DEVICE_CPU) {
    std::memcpy(dst, src, bytes);
    return;
  }
#ifdef APH_HAVE_CUDA
  cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy");
  // cudaMemcpy returns before a pageable host-to-device copy (or a device
  // copy) has landed, and kernels on non-blocking streams do not wait for
  // the default stream: the bytes must be in place when this returns.
  cuda_check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
#else
  throw Error(APH_ERR_UNSUPPORTED, "this build has no CUDA support");
#endif
}

int64_t Tensor::numel() const {
  return std::accumulate(shape_.begin(), shape_.end(), int64_t{1}, std::multiplies<int64_t>());
}

Tensor Tensor::empty(std::vector<int64_t> shape, aph_dtype dtype, int32_t device) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  t.storage_ = std::make_shared<Storage>(device, t.numel() * dtype_size(dtype));
  t.data_ = t.storage_->data();
  return t;
}

Tensor Tensor::zeros(std::vector<int64_t> shape, aph_dtype dtype, int32_t device) {
  Tensor t = empty(std::move(shape), dtype, device);
  if (device == APH_DEVICE_CPU) {
    std::memset(t.data_, 0, t.nbytes());
  } else {
#ifdef APH_HAVE_CUDA
    cuda_check(cudaMemset(t.data_, 0, t.nbytes()), "cudaMemset");
#endif
  }
  return t;
}

Tensor Tensor::borrow(void* data, std::vector<int64_t> shape, aph_dtype dtype, int32_t device) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  t.data_ = data;
  return t;
}

Tensor Tensor::reshape(std::vector<int64_t> shape) const {
  Tensor t = *this;
  t.shape_ = std::move(shape);
  if (t.numel() != numel()) throw Error(APH_ERR_INTERNAL, "reshape of " + describe() + " changes its size");
  return t;
}

Tensor Tensor::rows(int64_t begin, int64_t end) const {
  if (rank() == 0 || begin < 0 || end > shape_[0] || begin > end) {
    throw Error(APH_ERR_INTERNAL, "rows out of range of " + describe());
  }
  Tensor t = *this;
  int64_t row_elems = shape_[0] == 0 ? 0 : numel() / shape_[0];
  t.data_ = static_cast<char*>(data_) + begin * row_elems * dtype_size(dtype_);
  t.shape_[0] = end - begin;
  return t;
}

Tensor Tensor::to(int32_t device) const {
  Tensor t = empty(shape_, dtype_, device);
  copy_bytes(t.data_, device, data_, device_, nbytes());
  return t;
}

aph_tensor Tensor::view() const {
  aph_tensor v{};
  v.size = sizeof(aph_tensor);
  v.dtype = dtype_;
  v.device = device_;
  v.rank = rank();
  v.data = data_;
  int64_t stride = 1;
  for (int i = rank() - 1; i >= 0; --i) {
    v.shape[i] = shape_[i];
    v.strides[i] = stride;
    stride *= shape_[i];
  }
  return v;
}

std::string Tensor::describe() const {
  std::ostringstream out;
  out << dtype_name(dtype_) << "[";
  for (size_t i = 0; i < shape_.size(); ++i) out << (i ? "," : "") << shape_[i];
  out << "]@" << (device_ == APH_DEVICE_CPU ? std::string("cpu") : "cuda:" + std::to_string(device_));
  return out.str();
}

}  // namespace aph
