#include "plugins/samplers/plugin_state.hpp"

#include <algorithm>
#include <string_view>

#include "core/common/error.hpp"

#ifdef APH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace aph::samplers {

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr && services_ != nullptr) services_->device_free(services_->host, device_, data_);
}

void* DeviceBuffer::get(const aph_host_services* services, int32_t device, size_t bytes, void* stream) {
  if (data_ != nullptr && device == device_ && bytes <= bytes_) return data_;
  if (services == nullptr || services->device_alloc == nullptr) {
    throw Error(APH_ERR_INTERNAL, "samplers: no device_alloc host service");
  }
  if (data_ != nullptr) {
#ifdef APH_HAVE_CUDA
    cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
#endif
    services_->device_free(services_->host, device_, data_);
    data_ = nullptr;
  }
  size_t want = std::max<size_t>(bytes, 4096);
  want = want + want / 2;  // grow geometrically: batch sizes drift upwards
  aph_error err{};
  data_ = services->device_alloc(services->host, device, want, &err);
  if (data_ == nullptr) throw Error(APH_ERR_OUT_OF_MEMORY, std::string("samplers scratch: ") + err.message);
  services_ = services;
  device_ = device;
  bytes_ = want;
  return data_;
}

void PluginState::log(int32_t level, const std::string& message) const {
  if (services_ != nullptr && services_->log != nullptr) services_->log(services_->host, level, message.c_str());
}

void PluginState::set_vocab(const aph_sampler_vocab& v) {
  if (v.n_tokens < 0 || ((v.token_bytes == nullptr) != (v.token_lengths == nullptr))) {
    throw invalid_argument("set_vocab: bad n_tokens, or only one of token_bytes and token_lengths");
  }
  auto vocab = std::make_shared<Vocab>();
  vocab->n_tokens = v.n_tokens;
  vocab->has_text = v.token_bytes != nullptr && v.n_tokens > 0;
  vocab->bytes.resize(v.n_tokens);
  for (int32_t i = 0; vocab->has_text && i < v.n_tokens; ++i) {
    if (v.token_bytes[i] != nullptr) vocab->bytes[i].assign(v.token_bytes[i], v.token_lengths[i]);
  }
  vocab->eos_token_id = v.eos_token_id;
  if (v.n_eog > 0 && v.eog_token_ids != nullptr) vocab->eog_token_ids.assign(v.eog_token_ids, v.eog_token_ids + v.n_eog);
  vocab->by_bytes.resize(v.n_tokens);
  for (int32_t i = 0; i < v.n_tokens; ++i) vocab->by_bytes[i] = i;
  std::stable_sort(vocab->by_bytes.begin(), vocab->by_bytes.end(),
                   [&](int32_t a, int32_t b) { return vocab->bytes[a] < vocab->bytes[b]; });
  std::lock_guard<std::mutex> lock(mutex_);
  vocab_ = std::move(vocab);
  containing_cache_.clear();
}

std::shared_ptr<const Vocab> PluginState::vocab() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return vocab_;
}

std::shared_ptr<const std::vector<int32_t>> PluginState::tokens_containing(
    const std::vector<std::string>& needles) {
  std::string key;
  for (const std::string& n : needles) key += std::to_string(n.size()) + ":" + n;
  std::shared_ptr<const Vocab> vocab;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = containing_cache_.find(key);
    if (it != containing_cache_.end()) return it->second;
    vocab = vocab_;
  }
  auto ids = std::make_shared<std::vector<int32_t>>();
  if (vocab && vocab->has_text) {
    for (int32_t id = 0; id < vocab->size(); ++id) {
      std::string_view text = vocab->bytes[id];
      for (const std::string& n : needles) {
        if (!n.empty() && text.find(n) != std::string_view::npos) {
          ids->push_back(id);
          break;
        }
      }
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (vocab_ == vocab) containing_cache_[key] = ids;
  return ids;
}

void* PluginState::scratch(const std::string& key, int32_t device, size_t bytes, void* stream) {
  std::unique_ptr<DeviceBuffer>& buf = scratch_[key];
  if (!buf) buf = std::make_unique<DeviceBuffer>();
  return buf->get(services_, device, bytes, stream);
}

}  // namespace aph::samplers
