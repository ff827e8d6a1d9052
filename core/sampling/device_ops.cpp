#include "core/sampling/device_ops.hpp"

#include <string>

#include "core/common/error.hpp"

#ifdef APH_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "core/ops/kernels.hpp"
#endif

namespace aph::sampling {

#ifdef APH_HAVE_CUDA
namespace {
void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(APH_ERR_DEVICE, std::string("sampler chain: ") + what + ": " + cudaGetErrorString(e));
}
cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }
}  // namespace

void device_fill_i32(int32_t* dst, int32_t byte, size_t count, void* stream) {
  ok(cudaMemsetAsync(dst, byte, count * sizeof(int32_t), as_stream(stream)), "cudaMemsetAsync");
}
void device_upload(void* dst, const void* src, size_t bytes, void* stream) {
  ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, as_stream(stream)), "upload");
}
void device_download(void* dst, const void* src, size_t bytes, void* stream) {
  ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, as_stream(stream)), "download");
}
void device_sync(void* stream) { ok(cudaStreamSynchronize(as_stream(stream)), "cudaStreamSynchronize"); }

DeviceEvent::~DeviceEvent() {
  if (event_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
}

void DeviceEvent::record(void* stream) {
  if (event_ == nullptr) {
    cudaEvent_t e = nullptr;
    ok(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    event_ = e;
  }
  ok(cudaEventRecord(static_cast<cudaEvent_t>(event_), as_stream(stream)), "cudaEventRecord");
}

void DeviceEvent::wait() {
  if (event_ != nullptr) ok(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)), "cudaEventSynchronize");
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ != nullptr) cudaFreeHost(data_);
}

void* PinnedBuffer::reserve(size_t bytes) {
  if (bytes <= bytes_) return data_;
  if (data_ != nullptr) cudaFreeHost(data_);
  data_ = nullptr;
  bytes_ = 0;
  const size_t want = bytes + bytes / 2;
  ok(cudaMallocHost(&data_, want), "cudaMallocHost");
  bytes_ = want;
  on_device_ = ops::kernels::pinned_on_device(data_);
  return data_;
}

void PinnedBuffer::fill_from_device(const void* src, size_t bytes, void* stream) {
  void* dst = reserve(bytes);
  if (ops::kernels::kernel_copies_enabled() && on_device_ != nullptr && bytes % 4 == 0) {
    const int rc = ops::kernels::copy_words(static_cast<uint32_t*>(on_device_), static_cast<const uint32_t*>(src),
                                            static_cast<int64_t>(bytes / 4), nullptr, 0, 0, stream);
    ok(static_cast<cudaError_t>(rc), "copy_words (to host)");
    return;
  }
  device_download(dst, src, bytes, stream);
}
#else
namespace {
[[noreturn]] void no_cuda() { throw Error(APH_ERR_UNSUPPORTED, "sampler chain: built without CUDA"); }
}  // namespace
void device_fill_i32(int32_t*, int32_t, size_t, void*) { no_cuda(); }
void device_upload(void*, const void*, size_t, void*) { no_cuda(); }
void device_download(void*, const void*, size_t, void*) { no_cuda(); }
void device_sync(void*) { no_cuda(); }
DeviceEvent::~DeviceEvent() = default;
void DeviceEvent::record(void*) { no_cuda(); }
void DeviceEvent::wait() {}
PinnedBuffer::~PinnedBuffer() = default;
void* PinnedBuffer::reserve(size_t) { no_cuda(); }
void PinnedBuffer::fill_from_device(const void*, size_t, void*) { no_cuda(); }
#endif

}  // namespace aph::sampling
