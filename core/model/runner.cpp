#include "core/model/runner.hpp"

#include <algorithm>
#include <cstring>

#include "core/attention/split_plan.hpp"
#include "core/common/error.hpp"
#include "core/common/log.hpp"
#include "core/model/rope_freqs.hpp"

namespace aph::model {

namespace {

aph_dtype choose_act_dtype(const LoadOptions& o, const weights::ModelConfig& c) {
  const std::string& d = o.dtype;
  if (d != "auto" && d != "float32" && d != "float16" && d != "bfloat16") {
    throw invalid_argument("--dtype " + d + ": expected auto, float32, float16 or bfloat16");
  }
  if (o.device == APH_DEVICE_CPU) {
    if (d == "float16" || d == "bfloat16") throw invalid_argument("--dtype " + d + ": the CPU computes in float32");
    return APH_DTYPE_F32;
  }
  // The CUDA attention kernels take half-precision activations only.
  if (d == "float32") throw invalid_argument("--dtype float32: CUDA runs in float16 or bfloat16");
  if (d == "float16") return APH_DTYPE_F16;
  if (d == "bfloat16") return APH_DTYPE_BF16;
  return c.torch_dtype == "float16" ? APH_DTYPE_F16 : APH_DTYPE_BF16;
}

aph_dtype kv_aph_dtype(KvDtype d) {
  switch (d) {
    case KvDtype::F32: return APH_DTYPE_F32;
    case KvDtype::F16: return APH_DTYPE_F16;
    case KvDtype::BF16: return APH_DTYPE_BF16;
    case KvDtype::F8_E4M3: return APH_DTYPE_F8_E4M3;
    case KvDtype::F8_E5M2: return APH_DTYPE_F8_E5M2;
  }
  return APH_DTYPE_F32;
}

size_t align16(size_t n) { return (n + 15) / 16 * 16; }

}  // namespace

std::unique_ptr<ModelRunner> ModelRunner::load(const LoadOptions& options, const PluginRegistry& plugins) {
  return std::make_unique<Runner>(options, plugins);
}

Runner::Runner(const LoadOptions& options, const PluginRegistry& plugins) : device_(options.device) {
  auto log = logger("model");
  if (device_ != APH_DEVICE_CPU) {
    device_ctx_ = std::make_unique<DeviceContext>(device_);
    baseline_bytes_ = device_ctx_->used_bytes();
  } else {
    // One pool per process by default: plugins' CPU kernels run on it too
    // (host services' parallel_for), so they never compete with a second set.
    if (options.cpu_threads > 0) own_pool_ = std::make_unique<ops::ThreadPool>(options.cpu_threads);
    pool_ = own_pool_ ? own_pool_.get() : &ops::ThreadPool::shared();
  }
  resolved_ = resolve_model(options, plugins);
  weights::ModelConfig& c = resolved_.config;

  if (!resolved_.hf_tokenizer_dir.empty()) {
    tokenizer_ = text::Tokenizer::from_hf(resolved_.hf_tokenizer_dir);
  } else if (!resolved_.gguf_tokenizer.empty()) {
    tokenizer_ = text::Tokenizer::from_gguf_metadata(resolved_.gguf_tokenizer);
  }

  info_.architecture = c.architectures.empty() ? c.model_type : c.architectures.front();
  info_.vocab_size = c.vocab_size;
  info_.hidden_size = c.hidden_size;
  info_.num_layers = c.num_hidden_layers;
  info_.num_heads = c.num_attention_heads;
  info_.num_kv_heads = c.num_key_value_heads;
  info_.head_dim = c.head_dim;
  int64_t max_len = options.max_model_len > 0 ? options.max_model_len : c.max_position_embeddings;
  if (c.sliding_window > 0 && (c.use_sliding_window || info_.architecture == "MistralForCausalLM") &&
      max_len > c.sliding_window) {
    // Within the window full attention is exact; beyond it we would need a windowed kernel.
    log->warn("{}: capping the context at the sliding window of {} tokens", resolved_.config_source, c.sliding_window);
    max_len = c.sliding_window;
  }
  info_.max_model_len = max_len;
  info_.act_dtype = choose_act_dtype(options, c);
  info_.generation_defaults = resolved_.generation_defaults;
  info_.chat_template = resolved_.chat_template;
  if (tokenizer_) {
    if (tokenizer_->bos_id() >= 0) info_.bos_token = tokenizer_->token_text(tokenizer_->bos_id());
    if (tokenizer_->eos_id() >= 0) info_.eos_token = tokenizer_->token_text(tokenizer_->eos_id());
  }

  model_ = create_architecture(c, resolved_.config_source);

  setup_.device = device_;
  setup_.act_dtype = info_.act_dtype;
  setup_.rope_interleaved = resolved_.rope_interleaved;
  std::vector<float> divisors;
  if (resolved_.source->find("rope_freqs.weight")) {
    // GGUF carries Llama 3 scaling as this table; applying the config's too would scale twice.
    LoaderContext rc;
    rc.source = resolved_.source.get();
    divisors = WeightLoader(rc).host_f32("rope_freqs.weight", c.rotary_dim() / 2);
    if (c.rope_scaling.type == weights::RopeType::Llama3) c.rope_scaling.type = weights::RopeType::Default;
  }
  RopeTable rope = compute_rope_table(c, max_len, divisors);
  setup_.rope_mscale = rope.mscale;
  setup_.inv_freq = Tensor::empty({static_cast<int64_t>(rope.inv_freq.size())}, APH_DTYPE_F32, device_);
  copy_bytes(setup_.inv_freq.data(), device_, rope.inv_freq.data(), APH_DEVICE_CPU, rope.inv_freq.size() * 4);

  LoaderContext lc;
  lc.source = resolved_.source.get();
  lc.linear_plugin = resolved_.linear_plugin;
  lc.all_linears_via_plugin = resolved_.all_linears_via_plugin;
  lc.quant_config_json = resolved_.quant_config_json;
  lc.device = device_;
  lc.act_dtype = info_.act_dtype;
  lc.stream = stream();
  log->info("loading {} ({} layers, hidden {}, {} heads / {} kv, head_dim {}) on {} in {}", info_.architecture,
            c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.head_dim,
            device_ == APH_DEVICE_CPU ? std::string("cpu") : "cuda:" + std::to_string(device_),
            dtype_name(info_.act_dtype));
  model_->load(WeightLoader(lc), c, setup_);
  if (device_ctx_) ops::synchronize(exec());
}

Runner::~Runner() {
  if (device_ctx_) {
    try {
      ops::synchronize(exec());
    } catch (...) {
    }
  }
  // Plugin linears inside the model go before the source they came from.
  model_.reset();
}

const text::Tokenizer& Runner::tokenizer() const {
  if (!tokenizer_) throw invalid_argument("model " + resolved_.config_source + " ships no tokenizer");
  return *tokenizer_;
}

ops::Exec Runner::exec() const {
  ops::Exec e;
  e.device = device_;
  e.stream = stream();
  e.pool = pool_;
  e.blas = device_ctx_ ? device_ctx_->blas() : nullptr;
  return e;
}

int64_t Runner::kv_bytes_per_block(int block_size, KvDtype dtype) const {
  return 2 * info_.num_layers * static_cast<int64_t>(block_size) * info_.num_kv_heads * info_.head_dim *
         static_cast<int64_t>(dtype_size(kv_aph_dtype(dtype)));
}

void Runner::allocate_kv_cache(int num_blocks, int block_size, KvDtype dtype) {
  if (num_blocks <= 0 || block_size <= 0) throw invalid_argument("KV cache needs a positive number of blocks and block size");
  const aph_dtype dt = kv_aph_dtype(dtype);
  if (device_ctx_) device_ctx_->drop_graphs();
  kv_.clear();
  // One block more than asked: padded rows of captured decode graphs write there.
  pad_block_ = num_blocks;
  kv_layout_.num_blocks = num_blocks + 1;
  kv_layout_.block_size = block_size;
  kv_layout_.num_kv_heads = static_cast<int32_t>(info_.num_kv_heads);
  kv_layout_.head_dim = static_cast<int32_t>(info_.head_dim);
  kv_layout_.dtype = dt;
  for (int64_t l = 0; l < info_.num_layers; ++l) {
    std::vector<int64_t> shape{num_blocks + 1, block_size, info_.num_kv_heads, info_.head_dim};
    kv_.push_back({Tensor::zeros(shape, dt, device_), Tensor::zeros(shape, dt, device_)});
  }
}

void Runner::reserve(int64_t tokens, int64_t seqs, int64_t max_blocks) {
  if (tokens <= cap_tokens_ && seqs <= cap_seqs_ && max_blocks <= cap_blocks_) return;
  tokens = std::max(tokens, cap_tokens_);
  seqs = std::max(seqs, cap_seqs_);
  max_blocks = std::max(max_blocks, cap_blocks_);
  if (device_ctx_) {
    // Captured graphs point at the old buffers.
    ops::synchronize(exec());
    device_ctx_->drop_graphs();
  }
  model_->reserve(tokens);
  const int64_t h = info_.hidden_size, v = info_.vocab_size;
  normed_logits_ = Tensor::empty({tokens, h}, info_.act_dtype, device_);
  logits_ = Tensor::empty({tokens, v}, APH_DTYPE_F32, device_);
  if (device_ != APH_DEVICE_CPU) {
    lm_out_ = Tensor::empty({tokens, v}, info_.act_dtype, device_);
    const size_t tk = static_cast<size_t>(tokens), sq = static_cast<size_t>(seqs);
    const size_t sizes[7] = {tk * 4, tk * 4, (sq + 1) * 4, sq * 4, sq * static_cast<size_t>(max_blocks) * 4, tk * 8, tk * 4};
    size_t total = 0;
    for (int i = 0; i < 7; ++i) {
      off_[i] = total;
      total += align16(sizes[i]);
    }
    meta_dev_ = Tensor::empty({static_cast<int64_t>(total)}, APH_DTYPE_U8, device_);
    device_ctx_->staging(total);
    const size_t ws = attention::paged_attention_workspace_bytes(
        static_cast<int32_t>(seqs), static_cast<int32_t>(info_.num_heads), static_cast<int32_t>(info_.head_dim),
        static_cast<int32_t>(std::max<int64_t>(info_.max_model_len, max_blocks * kv_layout_.block_size)));
    attn_workspace_ = Tensor::empty({static_cast<int64_t>(std::max<size_t>(ws, 16))}, APH_DTYPE_U8, device_);
    split_counters_ = Tensor::zeros({std::max<int64_t>(seqs, 1) * info_.num_heads}, APH_DTYPE_I32, device_);
  }
  cap_tokens_ = tokens;
  cap_seqs_ = seqs;
  cap_blocks_ = max_blocks;
}

int64_t Runner::profile_peak_bytes(int max_num_batched_tokens) {
  reserve(max_num_batched_tokens, std::max<int64_t>(cap_seqs_, 1),
          std::max<int64_t>(cap_blocks_, (info_.max_model_len + 15) / 16));
  if (!device_ctx_) return 0;
  ops::synchronize(exec());
  // Every step buffer is preallocated for the largest step, so what is in use
  // now is the peak of any step.
  return device_ctx_->used_bytes() - baseline_bytes_;
}

void Runner::validate(const StepBatch& b) const {
  const int64_t t = static_cast<int64_t>(b.token_ids.size());
  const int s = b.n_seqs();
  if (kv_.empty()) throw invalid_argument("forward before allocate_kv_cache");
  if (t == 0 || s <= 0) throw invalid_argument("step batch is empty");
  if (static_cast<int64_t>(b.positions.size()) != t || static_cast<int64_t>(b.slot_mapping.size()) != t) {
    throw invalid_argument("step batch: positions and slot_mapping need one entry per token");
  }
  if (static_cast<int>(b.context_lens.size()) != s || b.max_blocks_per_seq <= 0 ||
      static_cast<int64_t>(b.block_tables.size()) != static_cast<int64_t>(s) * b.max_blocks_per_seq) {
    throw invalid_argument("step batch: context_lens / block_tables do not match the sequence count");
  }
  if (b.query_start.front() != 0 || b.query_start.back() != t) throw invalid_argument("step batch: query_start must run from 0 to n_tokens");
  const int64_t slots = static_cast<int64_t>(pad_block_) * kv_layout_.block_size;
  for (int i = 0; i < s; ++i) {
    const int32_t q = b.query_start[i + 1] - b.query_start[i];
    if (q < 0) throw invalid_argument("step batch: query_start is not ascending");
    if (b.context_lens[i] < q || b.context_lens[i] > static_cast<int64_t>(b.max_blocks_per_seq) * kv_layout_.block_size ||
        b.context_lens[i] > info_.max_model_len) {
      throw invalid_argument("step batch: context_lens[" + std::to_string(i) + "] = " + std::to_string(b.context_lens[i]) +
                             " is out of range");
    }
  }
  for (int32_t blk : b.block_tables)
    if (blk < 0 || blk >= pad_block_) throw invalid_argument("step batch: block table entry " + std::to_string(blk) + " out of range");
  for (int64_t i = 0; i < t; ++i) {
    if (b.token_ids[i] < 0 || b.token_ids[i] >= info_.vocab_size) {
      throw invalid_argument("step batch: token id " + std::to_string(b.token_ids[i]) + " outside the vocabulary");
    }
    if (b.slot_mapping[i] < 0 || b.slot_mapping[i] >= slots) throw invalid_argument("step batch: slot out of range");
    if (b.positions[i] < 0 || b.positions[i] >= info_.max_model_len) throw invalid_argument("step batch: position out of range");
  }
  if (b.logits_indices.empty()) throw invalid_argument("step batch: no logits_indices");
  for (int32_t i : b.logits_indices)
    if (i < 0 || i >= t) throw invalid_argument("step batch: logits index " + std::to_string(i) + " out of range");
}

// Copies the batch (padded to padded_seqs one-token sequences when larger)
// into the packed metadata buffer. On the CPU the views borrow the batch.
Runner::Meta Runner::stage(const StepBatch& b, int64_t padded_seqs, int32_t table_width) {
  Meta m;
  const int64_t t = static_cast<int64_t>(b.token_ids.size()), s = b.n_seqs();
  const int64_t tp = t + (padded_seqs - s), sp = padded_seqs;
  if (!device_ctx_) {
    auto borrow = [](const auto& v, aph_dtype dt) {
      return Tensor::borrow(const_cast<void*>(static_cast<const void*>(v.data())), {static_cast<int64_t>(v.size())}, dt,
                            APH_DEVICE_CPU);
    };
    m.ids = borrow(b.token_ids, APH_DTYPE_I32);
    m.positions = borrow(b.positions, APH_DTYPE_I32);
    m.query_start = borrow(b.query_start, APH_DTYPE_I32);
    m.context_lens = borrow(b.context_lens, APH_DTYPE_I32);
    m.block_tables = borrow(b.block_tables, APH_DTYPE_I32);
    m.slots = borrow(b.slot_mapping, APH_DTYPE_I64);
    m.logits_idx = borrow(b.logits_indices, APH_DTYPE_I32);
    return m;
  }
  device_ctx_->wait_staging();
  char* host = static_cast<char*>(device_ctx_->staging(0));
  auto* ids = reinterpret_cast<int32_t*>(host + off_[0]);
  auto* pos = reinterpret_cast<int32_t*>(host + off_[1]);
  auto* qs = reinterpret_cast<int32_t*>(host + off_[2]);
  auto* ctx = reinterpret_cast<int32_t*>(host + off_[3]);
  auto* tab = reinterpret_cast<int32_t*>(host + off_[4]);
  auto* slots = reinterpret_cast<int64_t*>(host + off_[5]);
  auto* lidx = reinterpret_cast<int32_t*>(host + off_[6]);
  std::copy(b.token_ids.begin(), b.token_ids.end(), ids);
  std::copy(b.positions.begin(), b.positions.end(), pos);
  std::copy(b.query_start.begin(), b.query_start.end(), qs);
  std::copy(b.context_lens.begin(), b.context_lens.end(), ctx);
  std::copy(b.slot_mapping.begin(), b.slot_mapping.end(), slots);
  std::copy(b.logits_indices.begin(), b.logits_indices.end(), lidx);
  for (int64_t i = 0; i < s; ++i) {
    for (int32_t j = 0; j < table_width; ++j) {
      tab[i * table_width + j] = j < b.max_blocks_per_seq ? b.block_tables[i * b.max_blocks_per_seq + j] : 0;
    }
  }
  // Padding rows: one token each at position 0, writing into the spare block.
  for (int64_t i = s; i < sp; ++i) {
    const int64_t tok = t + (i - s);
    ids[tok] = 0;
    pos[tok] = 0;
    slots[tok] = static_cast<int64_t>(pad_block_) * kv_layout_.block_size;
    lidx[tok] = static_cast<int32_t>(tok);
    qs[i + 1] = static_cast<int32_t>(tok + 1);
    ctx[i] = 1;
    for (int32_t j = 0; j < table_width; ++j) tab[i * table_width + j] = pad_block_;
  }
  // Only the used part of each section: they are reserved for the largest
  // step (394,260 bytes on the 135M bench), a decode of one sequence uses a
  // few hundred.
  const size_t tpb = static_cast<size_t>(tp), spb = static_cast<size_t>(sp);
  const DeviceContext::Range used[7] = {
      {off_[0], tpb * 4},       {off_[1], tpb * 4}, {off_[2], (spb + 1) * 4}, {off_[3], spb * 4},
      {off_[4], spb * static_cast<size_t>(table_width) * 4}, {off_[5], tpb * 8},
      {off_[6], (b.logits_indices.size() + (spb - static_cast<size_t>(s))) * 4}};
  device_ctx_->upload(meta_dev_.data(), host, used, fed_ids_, off_[0],
                      fed_ids_ != nullptr ? static_cast<size_t>(t) * sizeof(int32_t) : 0);
  char* dev = static_cast<char*>(meta_dev_.data());
  auto view = [&](int i, int64_t n, aph_dtype dt) { return Tensor::borrow(dev + off_[i], {n}, dt, device_); };
  m.ids = view(0, tp, APH_DTYPE_I32);
  m.positions = view(1, tp, APH_DTYPE_I32);
  m.query_start = view(2, sp + 1, APH_DTYPE_I32);
  m.context_lens = view(3, sp, APH_DTYPE_I32);
  m.block_tables = view(4, sp * table_width, APH_DTYPE_I32);
  m.slots = view(5, tp, APH_DTYPE_I64);
  m.logits_idx = view(6, static_cast<int64_t>(b.logits_indices.size()) + (sp - s), APH_DTYPE_I32);
  return m;
}

Tensor Runner::run(const Meta& meta, int64_t n_tokens, int64_t n_seqs, int32_t table_width, int32_t max_query_len,
                   int32_t max_context_len, bool short_contexts, int64_t n_logits, bool rows_in_order) {
  StepContext ctx;
  ctx.exec = exec();
  ctx.n_tokens = n_tokens;
  ctx.token_ids = meta.ids;
  ctx.positions = meta.positions;
  ctx.kv = &kv_;
  attention::PagedAttentionArgs& a = ctx.attention;
  a.device = device_;
  a.act_dtype = info_.act_dtype;
  a.layout = kv_layout_;
  a.n_tokens = static_cast<int32_t>(n_tokens);
  a.n_seqs = static_cast<int32_t>(n_seqs);
  a.query_start = meta.query_start.as<int32_t>();
  a.context_lens = meta.context_lens.as<int32_t>();
  a.block_tables = meta.block_tables.as<int32_t>();
  a.max_blocks_per_seq = table_width;
  a.slot_mapping = meta.slots.as<int64_t>();
  a.max_query_len = max_query_len;
  a.max_context_len = max_context_len;
  a.short_contexts = short_contexts;
  a.stream = stream();
  a.cpu_pool = pool_;
  if (attn_workspace_.defined()) {
    a.workspace = attn_workspace_.data();
    a.workspace_bytes = attn_workspace_.nbytes();
  }
  if (split_counters_.defined()) {
    a.split_counters = split_counters_.as<int32_t>();
    a.split_counter_slots = split_counters_.numel();
  }
  const FinalHidden fh = model_->forward(ctx);
  return head(ctx.exec, fh, meta.logits_idx, n_tokens, n_logits, rows_in_order);
}

Tensor Runner::head(const ops::Exec& exec, const FinalHidden& fh, const Tensor& idx, int64_t n_tokens,
                    int64_t n_logits, bool rows_in_order) {
  const Tensor& norm = model_->final_norm();
  const float eps = model_->norm_eps();
  const bool has_delta = fh.delta.defined();
  Tensor normed = normed_logits_.rows(0, n_logits);
  Tensor out = logits_.rows(0, n_logits);
  Tensor lm = device_ == APH_DEVICE_CPU ? out : lm_out_.rows(0, n_logits);
  Tensor spare = fh.spare;
  const Linear& lm_head = model_->lm_head();
  const auto* dense = dynamic_cast<const DenseLinear*>(&lm_head);
  const auto* plugin_head = dynamic_cast<const PluginLinear*>(&lm_head);
  // Decode: the head's plugin folds the last add and the final norm into its
  // input when it can, one kernel for what are add_rms_norm, the head's
  // quantization and (in general) a gather and a norm.
  const NormedInput in{&fh.stream, has_delta ? &fh.delta : nullptr, &norm, eps, &spare};
  if (rows_in_order && plugin_head != nullptr && plugin_head->forward_rms_norm(exec, in, lm)) {
    if (device_ != APH_DEVICE_CPU) ops::convert(exec, lm, out);
    return out;
  }
  // Otherwise the sum of the last add goes to spare (every token's row is
  // normed on the way: the head's input when the rows are in order).
  Tensor all_rows = normed_logits_.rows(0, n_tokens);  // reserve sized it for every token
  if (has_delta) {
    ops::add_rms_norm(exec, fh.stream, fh.delta, norm, eps, all_rows, spare);
  } else if (rows_in_order && dense == nullptr) {
    ops::rms_norm(exec, fh.stream, norm, eps, all_rows);
  }
  const Tensor& hidden = has_delta ? spare : fh.stream;
  if (dense != nullptr) {  // gathers and norms the summed rows itself
    ops::logits(exec, hidden, idx, norm, eps, dense->weight(), normed, out);
    return out;
  }
  if (rows_in_order) {
    lm_head.forward(exec, all_rows, lm);
  } else {
    // From the sums, not from all_rows: normed is the same buffer, and a
    // gather within one buffer would overwrite rows it has yet to read.
    ops::gather_rows(exec, hidden, idx, normed);
    ops::rms_norm(exec, normed, norm, eps, normed);
    lm_head.forward(exec, normed, lm);
  }
  if (device_ != APH_DEVICE_CPU) ops::convert(exec, lm, out);
  return out;
}

Tensor Runner::forward(const StepBatch& b) {
  validate(b);
  const int64_t t = static_cast<int64_t>(b.token_ids.size());
  const int s = b.n_seqs();
  int32_t max_q = 0, max_ctx = 0;
  for (int i = 0; i < s; ++i) {
    max_q = std::max(max_q, b.query_start[i + 1] - b.query_start[i]);
    max_ctx = std::max(max_ctx, b.context_lens[i]);
  }
  const bool short_contexts = max_ctx <= attention::kDecodeClusterContext;
  if (device_ctx_ && b.decode_only() && b.max_blocks_per_seq <= graph_table_width_) {
    auto it = std::lower_bound(graph_sizes_.begin(), graph_sizes_.end(), s);
    bool identity = static_cast<int>(b.logits_indices.size()) == s;
    for (int i = 0; identity && i < s; ++i) identity = b.logits_indices[i] == i;
    const int key = it != graph_sizes_.end() ? graph_key(*it, uses_clusters(*it, short_contexts)) : 0;
    if (it != graph_sizes_.end() && identity && device_ctx_->has_graph(key)) {
      stage(b, *it, graph_table_width_);
      device_ctx_->launch_graph(key);
      return logits_.rows(0, s);
    }
  }
  reserve(t, s, b.max_blocks_per_seq);
  Meta meta = stage(b, s, b.max_blocks_per_seq);
  bool in_order = static_cast<int64_t>(b.logits_indices.size()) == t;
  for (int64_t i = 0; in_order && i < t; ++i) in_order = b.logits_indices[i] == i;
  return run(meta, t, s, b.max_blocks_per_seq, max_q, max_ctx, short_contexts,
             static_cast<int64_t>(b.logits_indices.size()), in_order);
}

Tensor Runner::forward_fed(const StepBatch& b, const int32_t* ids) {
  if (!device_ctx_) return ModelRunner::forward_fed(b, ids);
  if (!b.decode_only()) throw invalid_argument("forward_fed: a batch of decodes only");
  if (ids == nullptr) throw invalid_argument("forward_fed: no token ids");
  struct Unset {
    const int32_t*& ids;
    ~Unset() { ids = nullptr; }
  } unset{fed_ids_};
  fed_ids_ = ids;
  return forward(b);
}

StepBatch Runner::padding_batch(int seqs, int32_t table_width) const {
  StepBatch b;
  for (int i = 0; i < seqs; ++i) {
    b.token_ids.push_back(0);
    b.positions.push_back(0);
    b.query_start.push_back(i);
    b.context_lens.push_back(1);
    b.slot_mapping.push_back(static_cast<int64_t>(pad_block_) * kv_layout_.block_size);
    b.logits_indices.push_back(i);
    for (int32_t j = 0; j < table_width; ++j) b.block_tables.push_back(pad_block_);
  }
  b.query_start.push_back(seqs);
  b.max_blocks_per_seq = table_width;
  return b;
}

bool Runner::uses_clusters(int batch_size, bool short_contexts) const {
  return attention::decode_uses_clusters(batch_size, short_contexts, kv_layout_.head_dim);
}

void Runner::capture_decode_graphs(const std::vector<int>& batch_sizes, int max_blocks_per_seq) {
  if (!device_ctx_ || batch_sizes.empty()) return;
  if (kv_.empty()) throw invalid_argument("capture_decode_graphs before allocate_kv_cache");
  if (max_blocks_per_seq <= 0) throw invalid_argument("capture_decode_graphs: max_blocks_per_seq must be positive");
  std::vector<int> sizes = batch_sizes;
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (sizes.front() <= 0) throw invalid_argument("capture_decode_graphs: batch sizes must be positive");
  reserve(sizes.back(), sizes.back(), max_blocks_per_seq);
  graph_table_width_ = max_blocks_per_seq;
  graph_sizes_.clear();
  // A graph reads max_context_len as a constant: size it for the longest sequence.
  const int32_t max_ctx = max_blocks_per_seq * kv_layout_.block_size;
  for (int bs : sizes) {
    StepBatch pad = padding_batch(bs, max_blocks_per_seq);
    for (bool short_contexts : {false, true}) {
      if (short_contexts && !uses_clusters(bs, true)) continue;  // the same graph
      // One eager run first: libraries and plugins finish their lazy set-up outside the capture.
      Meta meta = stage(pad, bs, max_blocks_per_seq);
      run(meta, bs, bs, max_blocks_per_seq, 1, max_ctx, short_contexts, bs, true);
      ops::synchronize(exec());
      const int key = graph_key(bs, short_contexts);
      device_ctx_->begin_capture();
      try {
        run(meta, bs, bs, max_blocks_per_seq, 1, max_ctx, short_contexts, bs, true);
      } catch (...) {
        try {
          device_ctx_->end_capture(key);
        } catch (...) {
        }
        throw;
      }
      device_ctx_->end_capture(key);
    }
    graph_sizes_.push_back(bs);
  }
  ops::synchronize(exec());
  logger("model")->info("captured decode graphs for {} batch sizes (up to {})", sizes.size(), sizes.back());
}

}  // namespace aph::model
