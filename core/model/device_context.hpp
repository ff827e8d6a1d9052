// The CUDA resources a runner owns: one stream for all its work, a cuBLAS
// handle bound to it (with a fixed workspace, so GEMMs can be captured into
// graphs), pinned staging for batch metadata, and the captured decode graphs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>

namespace aph::model {

class DeviceContext {
 public:
  explicit DeviceContext(int32_t device);
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  void* stream() const { return stream_; }
  void* blas() const { return blas_; }
  // Pinned host memory of at least `bytes` (contents kept on growth only up to the old size).
  void* staging(size_t bytes);
  // Async copy of the byte ranges `used` (offsets from src and dst alike)
  // from the staging buffer (src points into it) to dst on the stream, with
  // `fed_bytes` from the device pointer `fed` laid over dst's bytes
  // [fed_at, fed_at + fed_bytes), which must lie inside one range (ids fed
  // from the sampler; fed NULL: none). The staging buffer may be rewritten
  // after the next wait_staging(). One kernel reads the ranges over the bus
  // and the fed ids (APH_KERNEL_COPIES, on by default); =0: the copy engine
  // moves everything from the first range's start to the last one's end,
  // then the fed ids.
  struct Range {
    size_t at = 0, bytes = 0;
  };
  void upload(void* dst, const void* src, std::span<const Range> used, const void* fed = nullptr, size_t fed_at = 0,
              size_t fed_bytes = 0);
  void wait_staging();
  // Bytes of device memory in use now (cudaMemGetInfo), for profiling.
  int64_t used_bytes() const;

  void begin_capture();
  void end_capture(int batch_size);
  bool has_graph(int batch_size) const { return graphs_.count(batch_size) != 0; }
  void launch_graph(int batch_size);
  void drop_graphs();

 private:
  int32_t device_;
  void* stream_ = nullptr;
  void* blas_ = nullptr;
  void* blas_workspace_ = nullptr;
  void* staging_ = nullptr;
  void* staging_on_device_ = nullptr;  // staging_ as the device addresses it; NULL: not mapped
  size_t staging_bytes_ = 0;
  void* upload_done_ = nullptr;  // cudaEvent_t
  std::map<int, void*> graphs_;  // batch size -> cudaGraphExec_t
};

}  // namespace aph::model
