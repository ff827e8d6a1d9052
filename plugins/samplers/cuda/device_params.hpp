// Host-side helpers for stages' CUDA paths: per-row parameters travel in the
// launch (or, for large batches and id lists, go up to a scratch buffer of
// the plugin state), then one launch covers all active rows. Only compiled
// with CUDA.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "aphrodite/sampler.h"
#include "plugins/samplers/cuda/kernels.hpp"
#include "plugins/samplers/plugin_state.hpp"

namespace aph::samplers {

// Copies `bytes` from host to the scratch buffer `key` (stream-ordered).
void* upload_bytes(PluginState& st, const std::string& key, const void* data, size_t bytes, int32_t device,
                   aph_stream stream);

template <typename T>
T* upload(PluginState& st, const std::string& key, const std::vector<T>& v, const aph_sampler_batch& b,
          aph_stream stream) {
  return static_cast<T*>(upload_bytes(st, key, v.data(), v.size() * sizeof(T), b.logits.device, stream));
}

// The rows' parameter table for one launch: carried in the launch when they
// fit (row_params.hpp), else uploaded to the scratch buffer `key`.
template <int kBytes = 2048, typename T>
cuda::Rows<T, kBytes> row_table(PluginState& st, const std::string& key, const std::vector<T>& v,
                                const aph_sampler_batch& b, aph_stream stream) {
  cuda::Rows<T, kBytes> t;
  if (v.size() <= static_cast<size_t>(cuda::Rows<T, kBytes>::kInline)) {
    std::copy(v.begin(), v.end(), t.local);
  } else {
    t.device = upload(st, key, v, b, stream);
  }
  return t;
}

inline cuda::LogitsView logits_view(const aph_sampler_batch& b) {
  return {static_cast<float*>(b.logits.data), b.logits.strides[0], b.logits.shape[1], nullptr, 0};
}

// logits_view with the per-row live lists of the plugin's state on the
// batch's device (kernels.hpp's LiveList), for kernels that open rows with
// row_view.cuh or compact them: lists off when the batch gives no run_id or
// APH_SAMPLER_LIVE_LIST=0.
cuda::LogitsView live_logits_view(PluginState& st, const aph_sampler_batch& b, aph_stream stream);

// Throws APH_ERR_DEVICE naming the stage when a launcher reported an error.
void check_launch(const std::string& error, const char* stage);

// Uploads per-row id lists as (row_index, offsets, ids) for the scatter kernels.
struct IdLists {
  std::vector<int32_t> rows, offsets{0}, ids;
  std::vector<float> values;
  void add(int32_t row, const std::vector<int32_t>& list) {
    rows.push_back(row);
    ids.insert(ids.end(), list.begin(), list.end());
    offsets.push_back(static_cast<int32_t>(ids.size()));
  }
};
// The lists on the device, all four in one upload (one copy, not four).
struct DeviceLists {
  const int32_t* rows;
  const int32_t* offsets;
  const int32_t* ids;
  const float* values;  // null when the lists carry none
};
DeviceLists upload_lists(PluginState& st, const std::string& key, const IdLists& lists, const aph_sampler_batch& b,
                         aph_stream stream);

// Sets the listed ids to -inf (values empty) or adds `values`.
void scatter_lists(PluginState& st, const char* stage, const IdLists& lists, const aph_sampler_batch& b,
                   aph_stream stream);

}  // namespace aph::samplers
