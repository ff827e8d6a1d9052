#include "plugins/samplers/cuda/device_params.hpp"

#include <cuda_runtime_api.h>

#include "core/common/error.hpp"

namespace aph::samplers {

void* upload_bytes(PluginState& st, const std::string& key, const void* data, size_t bytes, int32_t device,
                   aph_stream stream) {
  if (bytes == 0) return st.scratch(key, device, 4, stream);
  return st.upload(key, device, data, bytes, stream);
}

void check_launch(const std::string& error, const char* stage) {
  if (!error.empty()) throw Error(APH_ERR_DEVICE, std::string("sampler stage ") + stage + ": " + error);
}

void scatter_lists(PluginState& st, const char* stage, const IdLists& lists, const aph_sampler_batch& b,
                   aph_stream stream) {
  if (lists.rows.empty()) return;
  const std::string k = stage;
  auto* rows = upload(st, k + ".rows", lists.rows, b, stream);
  auto* offsets = upload(st, k + ".offsets", lists.offsets, b, stream);
  auto* ids = upload(st, k + ".ids", lists.ids, b, stream);
  const float* values = lists.values.empty() ? nullptr : upload(st, k + ".values", lists.values, b, stream);
  check_launch(cuda::launch_scatter(logits_view(b), static_cast<int32_t>(lists.rows.size()), rows, offsets, ids,
                                    values, stream),
               stage);
}

}  // namespace aph::samplers
