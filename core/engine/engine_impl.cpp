#include "core/engine/engine_impl.hpp"

#include <boost/json.hpp>

#include "core/common/error.hpp"
#include "core/common/log.hpp"
#include "core/engine/histogram.hpp"
#include "core/engine/kv_setup.hpp"

#ifdef APH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace aph::engine {

void install_api(aph_engine_api& api, EngineImpl* engine);  // engine_api.cpp

namespace {
Event done_event() {
  Event ev;
  ev.kind = APH_EVENT_DONE;
  return ev;
}
}  // namespace

EngineImpl::EngineImpl(const EngineConfig& config, std::unique_ptr<model::ModelRunner> runner,
                       const PluginRegistry& plugins)
    : config_(config), runner_(std::move(runner)), tokenizer_(runner_->tokenizer()) {
  auto log = logger("engine");
  const model::ModelInfo& info = runner_->info();
  if (config_.block_size <= 0 || config_.block_size > 1024)
    throw invalid_argument("block_size: must be in [1, 1024]");
  max_model_len_ = info.max_model_len;
  if (config_.max_model_len > 0) {
    if (config_.max_model_len > info.max_model_len)
      throw invalid_argument("max_model_len: " + std::to_string(config_.max_model_len) +
                             " exceeds the model's context of " +
                             std::to_string(info.max_model_len));
    max_model_len_ = config_.max_model_len;
  }
  if (max_model_len_ <= 1)
    throw invalid_argument("max_model_len: the model reports no usable context");
  vocab_size_ = static_cast<int32_t>(info.vocab_size);
  token_vocab_size_ = std::min(vocab_size_, tokenizer_.vocab_size());
  eog_ids_ = tokenizer_.eog_ids();
  if (tokenizer_.eos_id() >= 0 &&
      std::find(eog_ids_.begin(), eog_ids_.end(), tokenizer_.eos_id()) == eog_ids_.end())
    eog_ids_.push_back(tokenizer_.eos_id());
  served_name_ = config_.served_model_name;
  if (served_name_.empty()) {
    std::string path = config_.model_path;
    while (!path.empty() && path.back() == '/') path.pop_back();
    served_name_ = path.substr(path.find_last_of('/') + 1);
    if (served_name_.empty()) served_name_ = info.architecture;
  }

  setup_kv_cache();

  sampling::ChainOptions chain_options;
  chain_options.order = config_.sampler_order;
  chain_options.device = runner_->device();
  chain_options.stream = runner_->stream();
  chain_options.vocab_size = vocab_size_;
  chain_options.eos_token_id = tokenizer_.eos_id();
  chain_options.eog_token_ids = eog_ids_;
  chain_options.token_bytes.reserve(token_vocab_size_);
  for (int32_t id = 0; id < token_vocab_size_; ++id)
    chain_options.token_bytes.push_back(tokenizer_.token_bytes(id));
  chain_ = sampling::SamplerChain::create(plugins, chain_options);
  dropped_row_sampling_ = chain_->prepare(boost::json::object{});

  default_template_ = config_.chat_template.empty() ? info.chat_template : config_.chat_template;

  install_api(api_, this);
  stats_.time_to_first_token = ttft_histogram();
  stats_.inter_token_latency = inter_token_histogram();
  stats_.e2e_latency = e2e_histogram();
  stats_.num_kv_blocks = blocks_->num_blocks();
  log->info("engine ready: {} ({}), context {}, {} KV blocks of {} tokens ({}), max_num_seqs {}",
            served_name_, info.architecture, max_model_len_, blocks_->num_blocks(),
            config_.block_size, kv_dtype_name(kv_dtype_), config_.max_num_seqs);
  thread_ = std::thread([this] { loop(); });
}

void EngineImpl::setup_kv_cache() {
  auto log = logger("engine");
  kv_dtype_ = parse_kv_dtype(config_.kv_cache_dtype, runner_->info().act_dtype);
  PoolInputs pool;
  pool.cuda = runner_->device() != APH_DEVICE_CPU;
  pool.gpu_memory_utilization = config_.gpu_memory_utilization;
  pool.kv_cache_memory = config_.kv_cache_memory;
  pool.cpu_kv_cache_bytes = config_.cpu_kv_cache_bytes;
  pool.bytes_per_block = runner_->kv_bytes_per_block(config_.block_size, kv_dtype_);
  if (pool.cuda) {
    pool.peak_bytes = runner_->profile_peak_bytes(config_.max_num_batched_tokens);
#ifdef APH_HAVE_CUDA
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaSetDevice(runner_->device()) != cudaSuccess ||
        cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess)
      throw Error(APH_ERR_DEVICE,
                  "cudaMemGetInfo failed on device " + std::to_string(runner_->device()));
    pool.total_device_bytes = static_cast<int64_t>(total_bytes);
#else
    throw Error(APH_ERR_UNSUPPORTED,
                "device: the model runner is on CUDA but this build has no CUDA");
#endif
    log->info("memory profile: peak {:.2f} GiB of {:.2f} GiB", pool.peak_bytes / 1073741824.0,
              pool.total_device_bytes / 1073741824.0);
  }
  const int64_t num_blocks =
      std::min<int64_t>(kv_pool_blocks(pool), std::numeric_limits<int32_t>::max() / 2);
  const int64_t capacity = num_blocks * config_.block_size;
  if (capacity < max_model_len_)
    throw invalid_argument(
        std::string(
            pool.cuda ? (config_.kv_cache_memory > 0 ? "kv_cache_memory" : "gpu_memory_utilization")
                      : "cpu_kv_cache_bytes") +
        ": the KV cache holds " + std::to_string(capacity) + " tokens, less than max_model_len " +
        std::to_string(max_model_len_) + "; raise it or lower max_model_len");
  runner_->allocate_kv_cache(static_cast<int>(num_blocks), config_.block_size, kv_dtype_);
  max_blocks_per_seq_ =
      static_cast<int>((max_model_len_ + config_.block_size - 1) / config_.block_size);
  blocks_ = std::make_unique<kv::BlockManager>(static_cast<int>(num_blocks), config_.block_size,
                                               config_.enable_prefix_caching);
  scheduler_ = std::make_unique<sched::Scheduler>(
      sched::SchedulerConfig{.max_num_seqs = config_.max_num_seqs,
                             .max_num_batched_tokens = config_.max_num_batched_tokens},
      *blocks_);
  if (pool.cuda && !config_.enforce_eager) {
    const auto sizes = decode_graph_batch_sizes(config_.max_num_seqs);
    const auto t0 = Clock::now();
    runner_->capture_decode_graphs(sizes, max_blocks_per_seq_);
    log->info("captured decode graphs for {} batch sizes in {:.1f} s", sizes.size(),
              std::chrono::duration<double>(Clock::now() - t0).count());
  }
}

EngineImpl::~EngineImpl() { shutdown(); }

void EngineImpl::shutdown() {
  {
    std::lock_guard lock(inbox_mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  inbox_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<RequestChannel> EngineImpl::submit(const std::string& request_json) {
  boost::system::error_code ec;
  boost::json::value parsed = boost::json::parse(request_json, ec);
  if (ec) throw invalid_argument("request: invalid JSON (" + ec.message() + ")");
  if (!parsed.is_object()) throw invalid_argument("request: expected a JSON object");
  auto req = std::make_unique<ActiveRequest>();
  req->params = parse_request(parsed.as_object(), tokenizer_, *chain_,
                              {.max_model_len = max_model_len_, .vocab_size = token_vocab_size_});
  if (!req->params.lora.empty())
    throw invalid_argument("lora: no adapter named \"" + req->params.lora + "\" is loaded");
  if (static_cast<int64_t>(req->params.prompt_ids.size()) + 1 >
      static_cast<int64_t>(blocks_->num_blocks()) * blocks_->block_size())
    throw invalid_argument("prompt: does not fit in the KV cache");
  req->channel = std::make_shared<RequestChannel>();
  req->arrival = Clock::now();
  auto channel = req->channel;
  {
    std::lock_guard lock(inbox_mu_);
    if (stopping_) throw Error(APH_ERR_CANCELLED, "engine: shutting down");
    if (static_cast<int64_t>(inbox_.size()) + queued_.load() >= config_.max_waiting)
      throw Error(APH_ERR_BUSY, "engine: the request queue is full (max_waiting " +
                                    std::to_string(config_.max_waiting) + "); retry later");
    req->id = next_id_++;
    inbox_.push_back(std::move(req));
  }
  inbox_cv_.notify_one();
  return channel;
}

void EngineImpl::take_inbox() {
  std::vector<std::unique_ptr<ActiveRequest>> incoming;
  {
    std::lock_guard lock(inbox_mu_);
    incoming.swap(inbox_);
  }
  for (auto& req : incoming) {
    ActiveRequest* r = req.get();
    const uint64_t salt = kv::prefix_salt(r->params.lora, r->params.cache_salt);
    try {
      for (int i = 0; i < r->params.n; ++i) {
        auto c = std::make_unique<Choice>();
        c->request = r;
        c->index = static_cast<uint32_t>(i);
        c->seq.id = (r->id << 8) | static_cast<uint64_t>(i & 0xff);
        c->seq.tokens = r->params.prompt_ids;
        c->seq.num_prompt_tokens = static_cast<int>(r->params.prompt_ids.size());
        c->seq.blocks.salt = salt;
        c->seq.owner = c.get();
        c->output = std::make_unique<ChoiceOutput>(tokenizer_, r->params, eog_ids_, max_model_len_);
        r->choices.push_back(std::move(c));
      }
    } catch (const std::exception& e) {
      Event ev;
      ev.kind = APH_EVENT_ERROR;
      ev.error_code = APH_ERR_INVALID_ARGUMENT;
      ev.error = e.what();
      r->channel->push(std::move(ev));
      r->channel->push(done_event());
      continue;
    }
    r->open_choices = r->params.n;
    scheduler_->add(&r->choices[0]->seq);
    for (int i = 1; i < r->params.n; ++i)
      scheduler_->add_fork(&r->choices[i]->seq, &r->choices[0]->seq);
    active_.push_back(std::move(req));
  }
}

void EngineImpl::handle_cancels() {
  for (auto& req : active_)
    if (req->open_choices > 0 && req->channel->cancel_requested()) abort_request(req.get());
}

void EngineImpl::abort_request(ActiveRequest* req) {
  for (auto& c : req->choices) {
    if (c->finished) continue;
    finish_choice(c.get(), "abort", std::nullopt, "");
  }
}

void EngineImpl::fail_request(ActiveRequest* req, aph_status code, const std::string& message) {
  logger("engine")->warn("request {} failed: {}", req->id, message);
  for (auto& c : req->choices) {
    if (c->finished) continue;
    scheduler_->finish(&c->seq);
    c->finished = true;
    --req->open_choices;
  }
  Event ev;
  ev.kind = APH_EVENT_ERROR;
  ev.error_code = code;
  ev.error = message;
  req->channel->push(std::move(ev));
}

void EngineImpl::retire_finished() {
  const auto now = Clock::now();
  for (auto it = active_.begin(); it != active_.end();) {
    ActiveRequest* r = it->get();
    if (r->open_choices > 0) {
      ++it;
      continue;
    }
    {
      std::lock_guard lock(stats_mu_);
      observe(stats_.e2e_latency, std::chrono::duration<double>(now - r->arrival).count());
      ++stats_.requests_finished;
    }
    r->channel->push(done_event());
    it = active_.erase(it);
  }
}

void EngineImpl::loop() {
  auto log = logger("engine");
  for (;;) {
    {
      std::unique_lock lock(inbox_mu_);
      auto ready = [&] { return stopping_ || !inbox_.empty() || scheduler_->has_work(); };
      if (!ready()) {
        inbox_cv_.wait(lock, ready);
        phases_.restart();
      }
      if (stopping_) break;
    }
    take_inbox();
    handle_cancels();
    // A queued step is sampled even when its sequences all ended meanwhile:
    // it points at them, and they are retired below.
    if (scheduler_->has_work() || queued_step_) {
      try {
        step();
      } catch (const std::exception& e) {
        queued_step_.reset();
        // A failure outside any one request's data (the device, a kernel):
        // the requests of this step fail, the engine keeps serving.
        log->error("engine step failed: {}", e.what());
        const aph_status code =
            dynamic_cast<const Error*>(&e) ? static_cast<const Error&>(e).code() : APH_ERR_INTERNAL;
        for (auto& req : active_)
          if (req->open_choices > 0)
            fail_request(req.get(), code, std::string("engine step failed: ") + e.what());
      }
    }
    // Gauges first: a client that sees DONE also sees its blocks freed.
    update_gauges();
    retire_finished();
    queued_.store(scheduler_->num_waiting());
  }
  queued_step_.reset();
  if (phases_.enabled()) log->info("{}", phases_.summary());
  // Shutdown: every open request ends as aborted so no reader waits forever.
  take_inbox();
  for (auto& req : active_) abort_request(req.get());
  retire_finished();
}

EngineStats EngineImpl::stats() const {
  std::lock_guard lock(stats_mu_);
  return stats_;
}

std::unique_ptr<Engine> Engine::create_with_runner(const EngineConfig& config,
                                                   std::unique_ptr<model::ModelRunner> runner,
                                                   const PluginRegistry& plugins) {
  if (!runner) throw invalid_argument("model: no runner");
  return std::make_unique<EngineImpl>(config, std::move(runner), plugins);
}

}  // namespace aph::engine
