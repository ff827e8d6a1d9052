// The sampler chain the engine runs once per step: every stage of every
// sampler plugin, in Aphrodite's default order, the [engine] sampler_order of
// aphrodite.toml, or a request's own order (SillyTavern's sampler_priority
// names, Kobold's sampler_order ids). Stages live in plugins; this runner only
// validates request fields, orders stages and calls them.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/common/tensor.hpp"
#include "core/plugins/registry.hpp"

namespace aph::sampling {

struct ChainOptions {
  // [engine] sampler_order: stage names or SillyTavern priority names. Empty =
  // each stage's default position. Masks and selection stages keep their place.
  std::vector<std::string> order;
  int32_t device = APH_DEVICE_CPU;  // where sample()'s logits live
  void* stream = nullptr;           // cudaStream_t the stages launch on; NULL on CPU
  int32_t vocab_size = 0;           // logits columns; bounds token-id fields
  int32_t eos_token_id = -1;
  std::vector<int32_t> eog_token_ids;  // every end-of-generation id (min_tokens masks them)
  // Tokenizer::token_bytes(id) for every id, for stages that match text
  // (banned_strings, DRY's text breakers); ids past its end (padded logits)
  // have no text. Empty: banned_strings is rejected as unsupported.
  std::vector<std::string> token_bytes;
  int32_t max_logprobs = 20;        // cap on a request's top-N
};

// One request's validated sampling parameters: each stage's per-request
// params plus the resolved stage order. Created by prepare() on the request
// thread; destroyed on any thread, but not while sample() uses it.
class RequestSampling {
 public:
  virtual ~RequestSampling() = default;
  // The request's seed; a random one when the request sent none or -1.
  virtual uint64_t seed() const = 0;
  // Top-N logprobs wanted: -1 none, 0 only the chosen token's.
  virtual int32_t logprobs() const = 0;
  // The request asked not to stop at EOS (a stop condition: the engine's job).
  virtual bool ignore_eos() const = 0;
};

// One row of the logits batch.
struct RowInput {
  const RequestSampling* sampling = nullptr;
  const int32_t* tokens = nullptr;          // host: prompt then output ids
  int64_t n_prompt = 0;
  int64_t n_tokens = 0;
  const int32_t* tokens_device = nullptr;   // same ids on the device, or NULL (then uploaded)
  uint64_t seed = 0;  // usually sampling->seed() (+ choice index for n > 1)
  uint64_t step = 0;  // output tokens so far; (seed, step) fixes the draw
};

struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0.0f;
};

// From the raw logits (before any stage), log-softmax over the whole vocab.
struct TokenLogprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;  // descending; size = the request's logprobs()
};

class SamplerChain {
 public:
  virtual ~SamplerChain() = default;

  // Collects the stages of every loaded sampler plugin. Throws aph::Error
  // naming the unknown stage in options.order, or a duplicate stage name.
  static std::unique_ptr<SamplerChain> create(const PluginRegistry& plugins,
                                              const ChainOptions& options);

  // Request thread; thread-safe. Validates every field a stage declares:
  // JSON type, range, aliases (rep_pen, typical, sampler_seed,
  // dry_penalty_last_n, ...), client quirks (a JSON-encoded string for a
  // string list, a comma string for an int list, null = absent, top_k -1/0 =
  // off, seed -1 = random), and the order fields ("sampler_order": [str] or
  // Kobold [int], "sampler_priority", "kobold_sampler_order",
  // "temperature_last"). Unknown keys are ignored. Throws aph::Error
  // (APH_ERR_INVALID_ARGUMENT) whose message starts with the field name.
  virtual std::unique_ptr<RequestSampling> prepare(const boost::json::object& request) const = 0;

  // Engine thread. logits: F32 [rows.size(), vocab] on options.device,
  // modified in place. Writes one token per row into `chosen` (host, resized)
  // and, when `logprobs` is not null, one entry per row (empty `top` and
  // token -1 for rows that asked for none). Synchronizes the stream once at
  // the end. Throws aph::Error when a stage fails.
  virtual void sample(Tensor& logits, std::span<const RowInput> rows, std::vector<int32_t>& chosen,
                      std::vector<TokenLogprobs>* logprobs) = 0;
  // sample() in two halves, so the engine can queue the next step's forward
  // between them. begin() runs or queues every stage and the copy of the
  // chosen ids to the host; `rows` (and their token histories) are not read
  // after it returns. chosen_ids() is where the chosen ids are on
  // options.device ([rows], valid until the next begin()). end() waits for
  // this sample's work only, then fills `chosen` and `logprobs` as sample()
  // does. A begin() must be followed by its end() before the next begin().
  virtual void begin(Tensor& logits, std::span<const RowInput> rows, bool want_logprobs) = 0;
  virtual const int32_t* chosen_ids() const = 0;
  virtual void end(std::vector<int32_t>& chosen, std::vector<TokenLogprobs>* logprobs) = 0;

  // The resolved default order (stage names), for logs and /metrics.
  virtual std::vector<std::string> stage_names() const = 0;
};

}  // namespace aph::sampling
