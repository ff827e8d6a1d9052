#include "plugins/samplers/plugin_state.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "core/common/error.hpp"

#ifdef APH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace aph::samplers {

DeviceBuffer::~DeviceBuffer() {
#ifdef APH_HAVE_CUDA
  if (event_ != nullptr) {
    cudaEventSynchronize(static_cast<cudaEvent_t>(event_));
    cudaEventDestroy(static_cast<cudaEvent_t>(event_));
  }
#endif
  if (staging_ != nullptr && services_ != nullptr) services_->pinned_free(services_->host, staging_);
  if (data_ != nullptr && services_ != nullptr) services_->device_free(services_->host, device_, data_);
}

void* DeviceBuffer::upload(const aph_host_services* services, int32_t device, const void* data, size_t bytes,
                           void* stream) {
  void* dst = get(services, device, bytes, stream);
#ifdef APH_HAVE_CUDA
  auto s = static_cast<cudaStream_t>(stream);
  if (event_ != nullptr) cudaEventSynchronize(static_cast<cudaEvent_t>(event_));  // staging free again
  if (staging_bytes_ < bytes) {
    if (staging_ != nullptr) services_->pinned_free(services_->host, staging_);
    staging_ = nullptr;
    staging_bytes_ = 0;
    aph_error err{};
    const size_t want = std::max<size_t>(bytes + bytes / 2, 4096);
    staging_ = services->pinned_alloc(services->host, want, &err);
    if (staging_ == nullptr) throw Error(APH_ERR_OUT_OF_MEMORY, std::string("samplers staging: ") + err.message);
    staging_bytes_ = want;
  }
  if (event_ == nullptr) {
    cudaEvent_t e = nullptr;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
      throw Error(APH_ERR_DEVICE, "samplers: cudaEventCreate failed");
    }
    event_ = e;
  }
  std::memcpy(staging_, data, bytes);
  cudaError_t e = cudaMemcpyAsync(dst, staging_, bytes, cudaMemcpyHostToDevice, s);
  if (e == cudaSuccess) e = cudaEventRecord(static_cast<cudaEvent_t>(event_), s);
  if (e != cudaSuccess) throw Error(APH_ERR_DEVICE, std::string("samplers upload: ") + cudaGetErrorString(e));
#else
  (void)data;
  throw Error(APH_ERR_UNSUPPORTED, "samplers: built without CUDA");
#endif
  return dst;
}

void* DeviceBuffer::get(const aph_host_services* services, int32_t device, size_t bytes, void* stream,
                        bool* allocated) {
  if (allocated != nullptr) *allocated = false;
  if (data_ != nullptr && device == device_ && bytes <= bytes_) return data_;
  if (allocated != nullptr) *allocated = true;
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

std::shared_ptr<DeviceFloatPool> PluginState::float_pool() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!float_pool_) float_pool_ = std::make_shared<DeviceFloatPool>(services_);
  return float_pool_;
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

void* PluginState::upload(const std::string& key, int32_t device, const void* data, size_t bytes, void* stream) {
  std::unique_ptr<DeviceBuffer>& buf = scratch_[key];
  if (!buf) buf = std::make_unique<DeviceBuffer>();
  return buf->upload(services_, device, data, bytes, stream);
}

void* PluginState::scratch(const std::string& key, int32_t device, size_t bytes, void* stream) {
  std::unique_ptr<DeviceBuffer>& buf = scratch_[key];
  if (!buf) buf = std::make_unique<DeviceBuffer>();
  return buf->get(services_, device, bytes, stream);
}

void* PluginState::filled_scratch(const std::string& key, int32_t device, size_t bytes, int fill, void* stream) {
  std::unique_ptr<DeviceBuffer>& buf = scratch_[key];
  if (!buf) buf = std::make_unique<DeviceBuffer>();
  bool allocated = false;
  void* data = buf->get(services_, device, bytes, stream, &allocated);
#ifdef APH_HAVE_CUDA
  if (allocated) {
    // The whole allocation: a later, larger request may reuse it unfilled.
    const cudaError_t e = cudaMemsetAsync(data, fill, buf->capacity(), static_cast<cudaStream_t>(stream));
    if (e != cudaSuccess) {
      scratch_.erase(key);
      throw Error(APH_ERR_DEVICE, "samplers scratch " + key + ": " + cudaGetErrorString(e));
    }
  }
#else
  (void)fill;
#endif
  return data;
}

void PluginState::drop_scratch(const std::string& key) { scratch_.erase(key); }

}  // namespace aph::samplers
