#include "core/model/device_context.hpp"

#include "core/common/error.hpp"

#ifdef APH_HAVE_CUDA
#include <algorithm>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "core/ops/kernels.hpp"
#endif

namespace aph::model {

#ifdef APH_HAVE_CUDA

namespace {
void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(APH_ERR_DEVICE, std::string(what) + ": " + cudaGetErrorString(e));
}
cudaStream_t S(void* s) { return static_cast<cudaStream_t>(s); }
constexpr size_t kBlasWorkspace = 32u << 20;
}  // namespace

DeviceContext::DeviceContext(int32_t device) : device_(device) {
  ck(cudaSetDevice(device), "cudaSetDevice");
  cudaStream_t s;
  // A blocking stream: synchronous loader copies on the legacy stream order against it.
  ck(cudaStreamCreate(&s), "cudaStreamCreate");
  stream_ = s;
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw Error(APH_ERR_DEVICE, "cublasCreate failed");
  blas_ = h;
  cublasSetStream(h, s);
  ck(cudaMalloc(&blas_workspace_, kBlasWorkspace), "cudaMalloc (cuBLAS workspace)");
  if (cublasSetWorkspace(h, blas_workspace_, kBlasWorkspace) != CUBLAS_STATUS_SUCCESS) {
    throw Error(APH_ERR_DEVICE, "cublasSetWorkspace failed");
  }
  cudaEvent_t ev;
  ck(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
  upload_done_ = ev;
}

DeviceContext::~DeviceContext() {
  cudaSetDevice(device_);
  if (stream_) cudaStreamSynchronize(S(stream_));
  drop_graphs();
  if (upload_done_) cudaEventDestroy(static_cast<cudaEvent_t>(upload_done_));
  if (staging_) cudaFreeHost(staging_);
  if (blas_) cublasDestroy(static_cast<cublasHandle_t>(blas_));
  if (blas_workspace_) cudaFree(blas_workspace_);
  if (stream_) cudaStreamDestroy(S(stream_));
}

void* DeviceContext::staging(size_t bytes) {
  if (bytes <= staging_bytes_) return staging_;
  wait_staging();
  if (staging_) cudaFreeHost(staging_);
  staging_ = nullptr;
  staging_on_device_ = nullptr;
  ck(cudaMallocHost(&staging_, bytes), "cudaMallocHost (batch staging)");
  staging_bytes_ = bytes;
  staging_on_device_ = ops::kernels::pinned_on_device(staging_);
  return staging_;
}

void DeviceContext::upload(void* dst, const void* src, std::span<const Range> used, const void* fed, size_t fed_at,
                           size_t fed_bytes) {
  if (used.empty()) return;
  size_t lo = used.front().at, hi = 0;
  bool whole_words = fed_bytes % 4 == 0 && fed_at % 4 == 0;
  bool fed_inside = fed == nullptr;  // the kernel writes only the spans: the fed ids must fall in one
  for (const Range& r : used) {
    lo = std::min(lo, r.at);
    hi = std::max(hi, r.at + r.bytes);
    whole_words = whole_words && (r.at | r.bytes) % 4 == 0;
    fed_inside = fed_inside || (fed_at >= r.at && fed_at + fed_bytes <= r.at + r.bytes);
  }
  const auto* host = static_cast<const char*>(src);
  const auto* base = static_cast<const char*>(staging_);
  const bool in_staging = staging_on_device_ != nullptr && host >= base && host + hi <= base + staging_bytes_;
  if (ops::kernels::kernel_copies_enabled() && in_staging && whole_words && fed_inside && (host - base) % 4 == 0 &&
      used.size() <= static_cast<size_t>(ops::kernels::WordSpans::kMax)) {
    ops::kernels::WordSpans spans;
    for (const Range& r : used) {
      spans.first[spans.count] = static_cast<int64_t>(r.at / 4);
      spans.words[spans.count] = static_cast<int64_t>(r.bytes / 4);
      ++spans.count;
    }
    const auto* src_dev = static_cast<const uint32_t*>(staging_on_device_) + (host - base) / 4;
    const int rc = ops::kernels::copy_word_spans(static_cast<uint32_t*>(dst), src_dev, spans,
                                                 static_cast<const uint32_t*>(fed), static_cast<int64_t>(fed_at / 4),
                                                 static_cast<int64_t>(fed_bytes / 4), stream_);
    ck(static_cast<cudaError_t>(rc), "copy_words (batch metadata)");
  } else {
    ck(cudaMemcpyAsync(static_cast<char*>(dst) + lo, host + lo, hi - lo, cudaMemcpyHostToDevice, S(stream_)),
       "cudaMemcpyAsync (batch metadata)");
    if (fed != nullptr)
      ck(cudaMemcpyAsync(static_cast<char*>(dst) + fed_at, fed, fed_bytes, cudaMemcpyDeviceToDevice, S(stream_)),
         "cudaMemcpyAsync (fed token ids)");
  }
  ck(cudaEventRecord(static_cast<cudaEvent_t>(upload_done_), S(stream_)), "cudaEventRecord");
}

void DeviceContext::wait_staging() {
  ck(cudaEventSynchronize(static_cast<cudaEvent_t>(upload_done_)), "cudaEventSynchronize");
}

int64_t DeviceContext::used_bytes() const {
  size_t free_b = 0, total = 0;
  ck(cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo");
  return static_cast<int64_t>(total - free_b);
}

void DeviceContext::begin_capture() {
  ck(cudaStreamBeginCapture(S(stream_), cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
}

void DeviceContext::end_capture(int batch_size) {
  cudaGraph_t graph = nullptr;
  ck(cudaStreamEndCapture(S(stream_), &graph), "cudaStreamEndCapture");
  cudaGraphExec_t exec = nullptr;
  cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  ck(e, "cudaGraphInstantiate");
  auto it = graphs_.find(batch_size);
  if (it != graphs_.end()) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(it->second));
  graphs_[batch_size] = exec;
}

void DeviceContext::launch_graph(int batch_size) {
  ck(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graphs_.at(batch_size)), S(stream_)), "cudaGraphLaunch");
}

void DeviceContext::drop_graphs() {
  for (auto& [b, g] : graphs_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(g));
  graphs_.clear();
}

#else

namespace {
[[noreturn]] void no_cuda() { throw Error(APH_ERR_UNSUPPORTED, "this build has no CUDA support"); }
}  // namespace

DeviceContext::DeviceContext(int32_t device) : device_(device) { no_cuda(); }
DeviceContext::~DeviceContext() = default;
void* DeviceContext::staging(size_t) { no_cuda(); }
void DeviceContext::upload(void*, const void*, std::span<const Range>, const void*, size_t, size_t) { no_cuda(); }
void DeviceContext::wait_staging() { no_cuda(); }
int64_t DeviceContext::used_bytes() const { return 0; }
void DeviceContext::begin_capture() { no_cuda(); }
void DeviceContext::end_capture(int) { no_cuda(); }
void DeviceContext::launch_graph(int) { no_cuda(); }
void DeviceContext::drop_graphs() {}

#endif

}  // namespace aph::model
