#include "plugins/samplers/cuda/device_params.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "core/common/error.hpp"
#include "core/common/env_flag.hpp"

namespace aph::samplers {

void* upload_bytes(PluginState& st, const std::string& key, const void* data, size_t bytes, int32_t device,
                   aph_stream stream) {
  if (bytes == 0) return st.scratch(key, device, 4, stream);
  return st.upload(key, device, data, bytes, stream);
}

namespace {
bool live_lists_enabled() {
  static const bool on = env_flag("APH_SAMPLER_LIVE_LIST", true);
  return on;
}
}  // namespace

cuda::LogitsView live_logits_view(PluginState& st, const aph_sampler_batch& b, aph_stream stream) {
  cuda::LogitsView v = logits_view(b);
  const bool has_run_id = b.size >= offsetof(aph_sampler_batch, run_id) + sizeof(b.run_id);
  if (!has_run_id || b.run_id == 0 || !live_lists_enabled()) return v;
  // Zeroed when allocated (run_id 0 matches no run); never cleared after:
  // a list of an earlier run is stale by its run_id. Growing waits for the
  // stream, so no queued kernel still uses the old buffer.
  const size_t bytes = static_cast<size_t>(b.logits.shape[0]) * sizeof(cuda::LiveList);
  v.live = static_cast<cuda::LiveList*>(
      st.filled_scratch("live_lists." + std::to_string(b.logits.device), b.logits.device, bytes, 0x00, stream));
  v.run_id = b.run_id;
  return v;
}

void check_launch(const std::string& error, const char* stage) {
  if (!error.empty()) throw Error(APH_ERR_DEVICE, std::string("sampler stage ") + stage + ": " + error);
}

DeviceLists upload_lists(PluginState& st, const std::string& key, const IdLists& lists, const aph_sampler_batch& b,
                         aph_stream stream) {
  static_assert(sizeof(float) == sizeof(int32_t), "values share the ids' words");
  std::vector<int32_t> packed;
  packed.reserve(lists.rows.size() + lists.offsets.size() + lists.ids.size() + lists.values.size());
  packed.insert(packed.end(), lists.rows.begin(), lists.rows.end());
  packed.insert(packed.end(), lists.offsets.begin(), lists.offsets.end());
  packed.insert(packed.end(), lists.ids.begin(), lists.ids.end());
  const size_t values_at = packed.size();
  packed.resize(values_at + lists.values.size());
  if (!lists.values.empty()) std::memcpy(packed.data() + values_at, lists.values.data(), lists.values.size() * 4);
  const auto* d = upload(st, key, packed, b, stream);
  const int32_t* offsets = d + lists.rows.size();
  const int32_t* ids = offsets + lists.offsets.size();
  const float* values = lists.values.empty() ? nullptr : reinterpret_cast<const float*>(d + values_at);
  return {d, offsets, ids, values};
}

void scatter_lists(PluginState& st, const char* stage, const IdLists& lists, const aph_sampler_batch& b,
                   aph_stream stream) {
  if (lists.rows.empty()) return;
  const DeviceLists d = upload_lists(st, std::string(stage) + ".lists", lists, b, stream);
  check_launch(cuda::launch_scatter(logits_view(b), static_cast<int32_t>(lists.rows.size()), d.rows, d.offsets,
                                    d.ids, d.values, stream),
               stage);
}

}  // namespace aph::samplers
