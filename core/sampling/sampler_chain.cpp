#include "core/sampling/sampler_chain.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "core/common/error.hpp"
#include "core/sampling/device_ops.hpp"
#include "core/sampling/raw_logprobs.hpp"
#include "core/sampling/request_fields.hpp"
#include "core/sampling/stage_order.hpp"

namespace aph::sampling {
namespace {

constexpr double kNoBound = __builtin_nan("");

// aph_sampler_batch.run_id: distinct across every chain of the process, since
// chains may share a plugin's state (and the per-run caches it keeps there).
uint64_t next_run_id() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

struct StageRef {
  const aph_sampler_stage* stage;
  void* state;
};

class ChainImpl;

class RequestSamplingImpl final : public RequestSampling {
 public:
  RequestSamplingImpl(const ChainImpl* chain, size_t n_stages) : chain_(chain), params(n_stages, nullptr) {}
  ~RequestSamplingImpl() override;
  uint64_t seed() const override { return seed_; }
  int32_t logprobs() const override { return logprobs_; }
  bool ignore_eos() const override { return ignore_eos_; }

  const ChainImpl* chain_;
  std::vector<void*> params;  // per stage; null = the stage is off for this request
  Order order;                // empty = the chain's default
  uint64_t seed_ = 0;
  int32_t logprobs_ = -1;
  bool ignore_eos_ = false;
};

class ChainImpl final : public SamplerChain {
 public:
  ChainImpl(const PluginRegistry& plugins, const ChainOptions& options);
  std::unique_ptr<RequestSampling> prepare(const boost::json::object& request) const override;
  void sample(Tensor& logits, std::span<const RowInput> rows, std::vector<int32_t>& chosen,
              std::vector<TokenLogprobs>* logprobs) override {
    begin(logits, rows, logprobs != nullptr);
    end(chosen, logprobs);
  }
  void begin(Tensor& logits, std::span<const RowInput> rows, bool want_logprobs) override;
  const int32_t* chosen_ids() const override { return chosen_ids_; }
  void end(std::vector<int32_t>& chosen, std::vector<TokenLogprobs>* logprobs) override;
  std::vector<std::string> stage_names() const override;

  void destroy_params(size_t stage, void* params) const {
    stages_[stage].stage->row_destroy(stages_[stage].state, params);
  }

 private:
  Order resolve_order(const boost::json::object& request) const;
  std::vector<int32_t> listed_stages(const boost::json::value& v, const std::string& field) const;
  void run_stage(size_t stage, aph_sampler_batch& batch);

  ChainOptions options_;
  std::vector<StageRef> stages_;
  std::unique_ptr<StageOrder> order_;
  Order configured_;  // default order with the toml's sampler_order applied
  RequestFields fields_;
  mutable std::atomic<uint64_t> seed_counter_;
  uint64_t seed_base_;
  // Engine-thread scratch, reused across steps.
  Tensor chosen_device_;
  Tensor tokens_device_;
  PinnedBuffer tokens_staging_;
  // The last end() saw all of the chain's queued work done (its event is
  // recorded after everything the chain queues).
  bool device_idle_ = true;
  std::vector<aph_sampler_row> row_scratch_;
  // What a begin() leaves for its end().
  int64_t begun_rows_ = 0;
  int64_t begun_vocab_ = 0;
  std::vector<int32_t> begun_logprobs_;  // each row's logprobs() (-1: none)
  std::vector<RawLogprobs> begun_raw_;
  std::vector<int32_t> host_chosen_;     // a CPU chain's chosen ids
  const int32_t* chosen_ids_ = nullptr;  // where they are on options_.device
  PinnedBuffer chosen_staging_;          // a device chain's copy of them on the host
  DeviceEvent chosen_ready_;             // recorded after that copy
};

RequestSamplingImpl::~RequestSamplingImpl() {
  for (size_t s = 0; s < params.size(); ++s) {
    if (params[s] != nullptr) chain_->destroy_params(s, params[s]);
  }
}

aph_sampler_field chain_field(const char* name, aph_field_type type, double def, double lo, double hi) {
  return {sizeof(aph_sampler_field), name, type, def, nullptr, lo, hi, "read by the sampler chain"};
}

ChainImpl::ChainImpl(const PluginRegistry& plugins, const ChainOptions& options) : options_(options) {
  std::set<std::string> names;
  std::vector<const aph_sampler_stage*> list;
  for (const LoadedSamplerPlugin& p : plugins.samplers) {
    if (p.vtable == nullptr) continue;
    for (uint32_t i = 0; i < p.vtable->n_stages; ++i) {
      const aph_sampler_stage& s = p.vtable->stages[i];
      if (!names.insert(s.name).second) {
        throw Error(APH_ERR_INVALID_ARGUMENT, "sampler stage '" + std::string(s.name) + "' is provided twice (plugin " +
                                                  p.name + ")");
      }
      stages_.push_back({&s, p.state});
      list.push_back(&s);
      fields_.add_stage(s);
    }
    // Text-matching stages need the vocabulary (set_vocab came after 1.0's
    // last field, so check the table is long enough to hold it).
    constexpr size_t need = offsetof(aph_sampler_vtable, set_vocab) + sizeof(void*);
    if (p.vtable->size >= need && p.vtable->set_vocab != nullptr) {
      if (static_cast<int64_t>(options_.token_bytes.size()) > options_.vocab_size) {
        throw invalid_argument("sampler chain: token_bytes has " + std::to_string(options_.token_bytes.size()) +
                               " entries for " + std::to_string(options_.vocab_size) + " logits");
      }
      const bool text = !options_.token_bytes.empty();
      std::vector<const char*> ptrs;
      std::vector<uint32_t> lens;
      // Logits rows may be wider than the tokenizer (padded embeddings):
      // the extra ids have no text.
      for (int32_t id = 0; text && id < options_.vocab_size; ++id) {
        const bool has = id < static_cast<int32_t>(options_.token_bytes.size());
        ptrs.push_back(has ? options_.token_bytes[id].data() : "");
        lens.push_back(has ? static_cast<uint32_t>(options_.token_bytes[id].size()) : 0);
      }
      aph_sampler_vocab v{sizeof(aph_sampler_vocab), options_.vocab_size, text ? ptrs.data() : nullptr,
                          text ? lens.data() : nullptr,
                          options_.eos_token_id, static_cast<uint32_t>(options_.eog_token_ids.size()),
                          options_.eog_token_ids.data()};
      aph_error err{};
      check(p.vtable->set_vocab(p.state, &v, &err), err, "sampler plugin " + p.name + " set_vocab");
    }
  }
  order_ = std::make_unique<StageOrder>(list);
  configured_ = order_->default_order();
  if (!options_.order.empty()) {
    std::vector<int32_t> listed;
    for (const std::string& name : options_.order) {
      for (int32_t s : order_->by_name(name, "[engine] sampler_order")) listed.push_back(s);
    }
    configured_ = order_->reorder(configured_, listed);
  }
  // Fields the chain reads itself.
  fields_.add(chain_field("seed", APH_FIELD_INT, -1, -1, kNoBound));
  fields_.add_alias("sampler_seed", "seed");
  fields_.add(chain_field("logprobs", APH_FIELD_JSON, 0, kNoBound, kNoBound));
  fields_.add(chain_field("top_logprobs", APH_FIELD_INT, 0, 0, options_.max_logprobs));
  fields_.add(chain_field("ignore_eos", APH_FIELD_BOOL, 0, 0, 1));
  fields_.add(chain_field("temperature_last", APH_FIELD_BOOL, 0, 0, 1));
  fields_.add(chain_field("sampler_order", APH_FIELD_JSON, 0, kNoBound, kNoBound));
  fields_.add(chain_field("sampler_priority", APH_FIELD_JSON, 0, kNoBound, kNoBound));
  fields_.add(chain_field("kobold_sampler_order", APH_FIELD_JSON, 0, kNoBound, kNoBound));
  seed_base_ = (static_cast<uint64_t>(std::random_device{}()) << 32) ^
               static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  seed_counter_ = 0;
}

std::vector<int32_t> ChainImpl::listed_stages(const boost::json::value& v, const std::string& field) const {
  std::vector<int32_t> out;
  if (!v.is_array()) throw invalid_argument(field + ": expected an array of sampler names or ids");
  for (const boost::json::value& e : v.as_array()) {
    std::vector<int32_t> found;
    if (e.is_string()) {
      found = order_->by_name(std::string(e.get_string()), field);
    } else if (e.is_int64()) {
      found = order_->by_kobold_id(e.get_int64(), field);
    } else if (e.is_uint64()) {
      // Above INT64_MAX: no such id (to_number would throw a non-aph error).
      if (e.get_uint64() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        throw invalid_argument(field + ": sampler id " + std::to_string(e.get_uint64()) + " is not a known id");
      found = order_->by_kobold_id(static_cast<int64_t>(e.get_uint64()), field);
    } else {
      throw invalid_argument(field + ": expected an array of sampler names or ids");
    }
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

Order ChainImpl::resolve_order(const boost::json::object& fields) const {
  for (const char* name : {"sampler_order", "sampler_priority", "kobold_sampler_order"}) {
    const boost::json::value& v = fields.at(name);
    if (v.is_null() || (v.is_array() && v.as_array().empty())) continue;
    // An explicit order wins over temperature_last, as in Aphrodite.
    return order_->reorder(configured_, listed_stages(v, name));
  }
  if (fields.at("temperature_last").as_bool()) return order_->move_last(configured_, "temperature");
  return {};
}

std::unique_ptr<RequestSampling> ChainImpl::prepare(const boost::json::object& request) const {
  boost::json::object fields = fields_.normalize(request);
  auto out = std::make_unique<RequestSamplingImpl>(this, stages_.size());

  const int64_t seed = fields.at("seed").as_int64();
  out->seed_ = seed >= 0 ? static_cast<uint64_t>(seed) : seed_base_ + 0x9E3779B97F4A7C15ull * ++seed_counter_;
  const boost::json::value& lp = fields.at("logprobs");
  const int64_t top = fields.at("top_logprobs").as_int64();
  if (lp.is_bool()) {
    out->logprobs_ = lp.get_bool() ? static_cast<int32_t>(top) : -1;
  } else if (lp.is_int64() || lp.is_uint64()) {
    const int64_t n = lp.is_int64() ? lp.get_int64()
                                    : static_cast<int64_t>(std::min<uint64_t>(
                                          lp.get_uint64(), std::numeric_limits<int64_t>::max()));
    if (n < 0 || n > options_.max_logprobs) {
      throw invalid_argument("logprobs: " + std::to_string(n) + " is outside [0, " +
                             std::to_string(options_.max_logprobs) + "]");
    }
    out->logprobs_ = static_cast<int32_t>(n);
  } else if (!lp.is_null()) {
    throw invalid_argument("logprobs: expected an integer or a boolean");
  }
  out->ignore_eos_ = fields.at("ignore_eos").as_bool();
  out->order = resolve_order(fields);

  const std::string text = boost::json::serialize(fields);
  for (size_t s = 0; s < stages_.size(); ++s) {
    aph_error err{};
    void* params = nullptr;
    aph_status rc = stages_[s].stage->row_create(stages_[s].state, text.c_str(), &params, &err);
    if (rc != APH_OK) throw Error(rc, err.message);
    out->params[s] = params;
  }
  return out;
}

void ChainImpl::run_stage(size_t s, aph_sampler_batch& batch) {
  aph_error err{};
  aph_status rc = stages_[s].stage->apply(stages_[s].state, &batch, options_.stream, &err);
  if (rc != APH_OK) throw Error(rc, "sampler stage " + std::string(stages_[s].stage->name) + ": " + err.message);
}

void ChainImpl::begin(Tensor& logits, std::span<const RowInput> rows, bool want_logprobs) {
  const int64_t n = static_cast<int64_t>(rows.size());
  if (logits.dtype() != APH_DTYPE_F32 || logits.rank() != 2 || logits.dim(0) != n) {
    throw invalid_argument("sampler chain: logits must be F32 [rows, vocab], got " + logits.describe());
  }
  if (logits.device() != options_.device) {
    throw invalid_argument("sampler chain: logits on device " + std::to_string(logits.device()) +
                           ", chain built for " + std::to_string(options_.device));
  }
  const int64_t vocab = logits.dim(1);
  const bool on_device = options_.device != APH_DEVICE_CPU;
  if (on_device && !device_idle_) device_sync(options_.stream);  // a failed step may have left copies in flight
  device_idle_ = !on_device;
  std::vector<const RequestSamplingImpl*> req(n);
  for (int64_t i = 0; i < n; ++i) {
    req[i] = dynamic_cast<const RequestSamplingImpl*>(rows[i].sampling);
    if (req[i] == nullptr || req[i]->chain_ != this) {
      throw invalid_argument("sampler chain: row " + std::to_string(i) + " was not prepared by this chain");
    }
  }

  // Logprobs come from the raw logits, so read them before any stage runs.
  begun_rows_ = n;
  begun_vocab_ = vocab;
  begun_logprobs_.assign(n, -1);
  std::vector<RawLogprobs>& raw = begun_raw_;
  raw.assign(n, RawLogprobs{});
  std::vector<float> host_row;
  for (int64_t i = 0; i < n; ++i) {
    if (!want_logprobs || req[i]->logprobs_ < 0) continue;
    begun_logprobs_[i] = req[i]->logprobs_;
    const float* src = logits.as<float>() + i * vocab;
    if (on_device) {
      host_row.resize(vocab);
      device_download(host_row.data(), src, vocab * sizeof(float), options_.stream);
      device_sync(options_.stream);
      src = host_row.data();
    }
    raw[i] = raw_logprobs(src, vocab, req[i]->logprobs_);
  }

  // chosen: -1 everywhere until a selection stage decides.
  host_chosen_.assign(n, -1);
  int32_t* chosen_ptr = host_chosen_.data();
  if (on_device) {
    if (!chosen_device_.defined() || chosen_device_.numel() < n) {
      chosen_device_ = Tensor::empty({std::max<int64_t>(n, 64)}, APH_DTYPE_I32, options_.device);
    }
    chosen_ptr = chosen_device_.as<int32_t>();
    device_fill_i32(chosen_ptr, 0xFF, n, options_.stream);
  }

  // Token histories on the device, for stages that read them there (only
  // when a row uses such a stage: the upload is the costly part).
  std::vector<const int32_t*> tokens_dev(n, nullptr);
  bool needs_history = false;
  for (size_t s = 0; s < stages_.size() && !needs_history; ++s) {
    if ((stages_[s].stage->flags & APH_SAMPLER_NEEDS_HISTORY) == 0) continue;
    for (int64_t i = 0; i < n && !needs_history; ++i) needs_history = req[i]->params[s] != nullptr;
  }
  if (on_device && needs_history) {
    int64_t total = 0;
    for (const RowInput& r : rows) {
      if (r.tokens_device == nullptr) total += r.n_tokens;
    }
    if (total > 0) {
      if (!tokens_device_.defined() || tokens_device_.numel() < total) {
        tokens_device_ = Tensor::empty({total + total / 2}, APH_DTYPE_I32, options_.device);
      }
      // One DMA from pinned memory: the previous step ended with a stream
      // sync, so the staging copy is free to refill.
      auto* staging = static_cast<int32_t*>(tokens_staging_.reserve(total * sizeof(int32_t)));
      int64_t off = 0;
      for (int64_t i = 0; i < n; ++i) {
        if (rows[i].tokens_device != nullptr) {
          tokens_dev[i] = rows[i].tokens_device;
          continue;
        }
        if (rows[i].n_tokens > 0) std::copy(rows[i].tokens, rows[i].tokens + rows[i].n_tokens, staging + off);
        tokens_dev[i] = tokens_device_.as<int32_t>() + off;
        off += rows[i].n_tokens;
      }
      device_upload(tokens_device_.data(), staging, total * sizeof(int32_t), options_.stream);
    } else {
      for (int64_t i = 0; i < n; ++i) tokens_dev[i] = rows[i].tokens_device;
    }
  }

  aph_sampler_batch batch{};
  batch.size = sizeof(aph_sampler_batch);
  batch.logits = logits.view();
  batch.chosen = aph_tensor{};
  batch.chosen.size = sizeof(aph_tensor);
  batch.chosen.dtype = APH_DTYPE_I32;
  batch.chosen.device = options_.device;
  batch.chosen.rank = 1;
  batch.chosen.data = chosen_ptr;
  batch.chosen.shape[0] = n;
  batch.chosen.strides[0] = 1;
  batch.n_rows = static_cast<uint32_t>(n);
  batch.eos_token_id = options_.eos_token_id;
  batch.run_id = next_run_id();

  // Rows that share an order run the chain together; usually that is all.
  std::map<const Order*, std::vector<int64_t>, bool (*)(const Order*, const Order*)> groups(
      [](const Order* a, const Order* b) { return *a < *b; });
  for (int64_t i = 0; i < n; ++i) {
    const Order* o = req[i]->order.empty() ? &configured_ : &req[i]->order;
    groups[o].push_back(i);
  }
  row_scratch_.assign(n, aph_sampler_row{});
  batch.rows = row_scratch_.data();
  for (const auto& [order, members] : groups) {
    std::vector<bool> in_group(n, false);
    for (int64_t i : members) in_group[i] = true;
    for (int32_t s : *order) {
      bool used = false;
      for (int64_t i = 0; i < n; ++i) {
        aph_sampler_row& r = row_scratch_[i];
        r.size = sizeof(aph_sampler_row);
        r.params = in_group[i] ? req[i]->params[s] : nullptr;
        r.tokens = rows[i].tokens;
        r.n_prompt = rows[i].n_prompt;
        r.n_tokens = rows[i].n_tokens;
        r.tokens_device = tokens_dev[i];
        r.seed = rows[i].seed;
        r.step = rows[i].step;
        used = used || r.params != nullptr;
      }
      if (used) run_stage(s, batch);
    }
  }

  chosen_ids_ = chosen_ptr;
  if (on_device) {
    // Into page-locked memory: a copy to pageable memory would return only
    // once the stream got there, and work queued behind it (the next step)
    // could not overlap.
    chosen_staging_.fill_from_device(chosen_ptr, n * sizeof(int32_t), options_.stream);
    chosen_ready_.record(options_.stream);
  }
}

void ChainImpl::end(std::vector<int32_t>& chosen, std::vector<TokenLogprobs>* logprobs) {
  const int64_t n = begun_rows_;
  std::vector<int32_t> host_chosen(n);
  if (options_.device != APH_DEVICE_CPU) {
    chosen_ready_.wait();
    const auto* staged = static_cast<const int32_t*>(chosen_staging_.reserve(n * sizeof(int32_t)));
    std::copy(staged, staged + n, host_chosen.begin());
    device_idle_ = true;
  } else {
    host_chosen = host_chosen_;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (host_chosen[i] < 0 || host_chosen[i] >= begun_vocab_) {
      throw Error(APH_ERR_INTERNAL, "sampler chain: no selection stage chose a token for row " + std::to_string(i));
    }
  }
  chosen = std::move(host_chosen);
  if (logprobs != nullptr) {
    logprobs->assign(n, TokenLogprobs{});
    for (int64_t i = 0; i < n; ++i) {
      if (begun_logprobs_[i] < 0) continue;
      RawLogprobs& raw = begun_raw_[i];
      TokenLogprobs& out = (*logprobs)[i];
      out.chosen.token = chosen[i];
      out.chosen.logprob = static_cast<float>(static_cast<double>(raw.logits[chosen[i]]) - raw.log_z);
      out.top = std::move(raw.top);
    }
  }
}

std::vector<std::string> ChainImpl::stage_names() const {
  std::vector<std::string> out;
  for (int32_t s : configured_) out.emplace_back(stages_[s].stage->name);
  return out;
}

}  // namespace

std::unique_ptr<SamplerChain> SamplerChain::create(const PluginRegistry& plugins, const ChainOptions& options) {
  return std::make_unique<ChainImpl>(plugins, options);
}

}  // namespace aph::sampling
