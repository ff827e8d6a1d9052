// The plugin's state: host services, the model vocabulary (for text-matching
// stages), caches derived from it, and device scratch buffers reused across
// steps. Request threads read it concurrently; the engine thread owns scratch.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "plugins/samplers/device_float_pool.hpp"
#include "aphrodite/sampler.h"

namespace aph::samplers {

struct Vocab {
  int32_t n_tokens = 0;
  bool has_text = false;           // bytes are the tokens' text (else all empty)
  std::vector<std::string> bytes;  // per token id
  int32_t eos_token_id = -1;
  std::vector<int32_t> eog_token_ids;
  std::vector<int32_t> by_bytes;   // ids sorted by their bytes (prefix range lookups)
  int32_t size() const { return n_tokens; }
};

// Device memory that grows on demand; freed through the host services.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  // Returns at least `bytes` on `device`; waits for `stream` before freeing an
  // old, smaller buffer (a kernel may still read it).
  void* get(const aph_host_services* services, int32_t device, size_t bytes, void* stream,
            bool* allocated = nullptr);
  // Copies host data into the buffer through a pinned staging copy, so the
  // transfer is truly asynchronous. The staging copy is reused once the
  // previous transfer from it has finished (an event tells).
  void* upload(const aph_host_services* services, int32_t device, const void* data, size_t bytes, void* stream);
  size_t capacity() const { return bytes_; }

 private:
  const aph_host_services* services_ = nullptr;
  int32_t device_ = -1;
  size_t bytes_ = 0;
  void* data_ = nullptr;
  void* staging_ = nullptr;  // pinned host memory
  size_t staging_bytes_ = 0;
  void* event_ = nullptr;    // cudaEvent_t recorded after the last upload
};

class PluginState {
 public:
  explicit PluginState(const aph_host_services* services) : services_(services) {}

  const aph_host_services* services() const { return services_; }
  void log(int32_t level, const std::string& message) const;

  void set_vocab(const aph_sampler_vocab& vocab);
  // Null until the engine sets a vocabulary.
  std::shared_ptr<const Vocab> vocab() const;

  // Tokens whose bytes contain any of `needles` (DRY sequence breakers),
  // cached per needle set; empty when no vocabulary is set.
  std::shared_ptr<const std::vector<int32_t>> tokens_containing(const std::vector<std::string>& needles);

  // Engine thread only. A named scratch buffer of at least `bytes`.
  void* scratch(const std::string& key, int32_t device, size_t bytes, void* stream);
  // Engine thread only. A named scratch buffer whose every byte was `fill`
  // when it was allocated; callers that use it restore it before they return,
  // so it is not cleared each step.
  void* filled_scratch(const std::string& key, int32_t device, size_t bytes, int fill, void* stream);
  // Engine thread only. Frees a scratch buffer (a filled one left dirty).
  void drop_scratch(const std::string& key);
  // Engine thread only. Uploads host data into the named scratch buffer.
  void* upload(const std::string& key, int32_t device, const void* data, size_t bytes, void* stream);

  // Per-request device floats; shared, so request state may outlive the state.
  std::shared_ptr<DeviceFloatPool> float_pool();

 private:
  const aph_host_services* services_;
  mutable std::mutex mutex_;
  std::shared_ptr<const Vocab> vocab_;
  std::map<std::string, std::shared_ptr<const std::vector<int32_t>>> containing_cache_;
  std::map<std::string, std::unique_ptr<DeviceBuffer>> scratch_;
  std::shared_ptr<DeviceFloatPool> float_pool_;  // guarded by mutex_
};

}  // namespace aph::samplers
