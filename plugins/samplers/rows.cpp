#include "plugins/samplers/rows.hpp"

#include <string>

#include "core/common/error.hpp"

#ifdef APH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace aph::samplers {

void check_batch(const aph_sampler_batch& b, const char* stage) {
  const std::string where = std::string("sampler stage ") + stage + ": ";
  if (b.logits.dtype != APH_DTYPE_F32 || b.logits.rank != 2 || b.logits.shape[0] != b.n_rows ||
      b.logits.strides[1] != 1 || b.logits.strides[0] < b.logits.shape[1]) {
    throw invalid_argument(where + "logits must be F32 [n_rows, vocab] with unit inner stride");
  }
  if (b.chosen.dtype != APH_DTYPE_I32 || b.chosen.rank != 1 || b.chosen.shape[0] != b.n_rows ||
      b.chosen.device != b.logits.device) {
    throw invalid_argument(where + "chosen must be I32 [n_rows] on the logits' device");
  }
  if (b.n_rows > 0 && b.rows == nullptr) throw invalid_argument(where + "rows is NULL");
}

#ifdef APH_HAVE_CUDA
namespace {
void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(APH_ERR_DEVICE, std::string(what) + ": " + cudaGetErrorString(e));
}
}  // namespace
#endif

void run_on_host_copy(const aph_sampler_batch& batch, aph_stream stream,
                      const std::function<void(const aph_sampler_batch&)>& body) {
#ifdef APH_HAVE_CUDA
  auto s = static_cast<cudaStream_t>(stream);
  const int64_t vocab = batch.logits.shape[1];
  const int64_t stride = batch.logits.strides[0];
  std::vector<uint32_t> used;
  for (uint32_t i = 0; i < batch.n_rows; ++i) {
    if (batch.rows[i].params != nullptr) used.push_back(i);
  }
  if (used.empty()) return;
  std::vector<float> logits(used.size() * vocab);
  std::vector<int32_t> chosen(used.size());
  std::vector<aph_sampler_row> rows(used.size());
  auto* dev_logits = static_cast<float*>(batch.logits.data);
  auto* dev_chosen = static_cast<int32_t*>(batch.chosen.data);
  for (size_t r = 0; r < used.size(); ++r) {
    cuda_ok(cudaMemcpyAsync(logits.data() + r * vocab, dev_logits + used[r] * stride, vocab * sizeof(float),
                            cudaMemcpyDeviceToHost, s), "samplers: copy logits to host");
    cuda_ok(cudaMemcpyAsync(&chosen[r], dev_chosen + used[r], sizeof(int32_t), cudaMemcpyDeviceToHost, s),
            "samplers: copy chosen to host");
    rows[r] = batch.rows[used[r]];
    rows[r].tokens_device = nullptr;
  }
  cuda_ok(cudaStreamSynchronize(s), "samplers: synchronize");
  aph_sampler_batch host = batch;
  host.n_rows = static_cast<uint32_t>(used.size());
  host.rows = rows.data();
  host.run_id = 0;  // its rows are renumbered: not the run's batch
  host.logits.device = APH_DEVICE_CPU;
  host.logits.data = logits.data();
  host.logits.shape[0] = host.n_rows;
  host.logits.strides[0] = vocab;
  host.chosen.device = APH_DEVICE_CPU;
  host.chosen.data = chosen.data();
  host.chosen.shape[0] = host.n_rows;
  body(host);
  for (size_t r = 0; r < used.size(); ++r) {
    cuda_ok(cudaMemcpyAsync(dev_logits + used[r] * stride, logits.data() + r * vocab, vocab * sizeof(float),
                            cudaMemcpyHostToDevice, s), "samplers: copy logits to device");
    cuda_ok(cudaMemcpyAsync(dev_chosen + used[r], &chosen[r], sizeof(int32_t), cudaMemcpyHostToDevice, s),
            "samplers: copy chosen to device");
  }
  // The host vectors die here: wait until the copies have read them.
  cuda_ok(cudaStreamSynchronize(s), "samplers: synchronize");
#else
  (void)batch;
  (void)stream;
  (void)body;
  throw Error(APH_ERR_UNSUPPORTED, "samplers: built without CUDA, cannot run on a device batch");
#endif
}

}  // namespace aph::samplers
