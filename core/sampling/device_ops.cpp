#include "core/sampling/device_ops.hpp"

#include <string>

#include "core/common/error.hpp"

#ifdef APH_HAVE_CUDA
#include <cuda_runtime_api.h>
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
  return data_;
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
#endif

}  // namespace aph::sampling
