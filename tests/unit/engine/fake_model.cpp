#include "fake_model.hpp"

#include <limits>

#include "core/common/error.hpp"

namespace aph::test {

FakeTokenizer::FakeTokenizer() {
  texts_ = {"<s>", "</s>", " "};
  for (char c = 'a'; c <= 'z'; ++c) texts_.emplace_back(1, c);
  for (char c = '0'; c <= '9'; ++c) texts_.emplace_back(1, c);
  for (char c = 'A'; c <= 'X'; ++c) texts_.emplace_back(1, c);
  texts_.emplace_back("!");
}

std::vector<int32_t> FakeTokenizer::encode(std::string_view text,
                                           const text::EncodeOptions& options) const {
  std::vector<int32_t> ids;
  if (options.add_special) ids.push_back(0);
  for (char c : text) {
    int32_t id = 2;
    for (int32_t i = 2; i < 64; ++i)
      if (texts_[i][0] == c) id = i;
    ids.push_back(id);
  }
  return ids;
}

std::string FakeTokenizer::token_bytes(int32_t id) const { return texts_.at(id); }
const std::string& FakeTokenizer::token_text(int32_t id) const { return texts_.at(id); }

std::string FakeTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  std::string out;
  for (int32_t id : ids)
    if (!(skip_special_tokens && is_special(id))) out += texts_.at(id);
  return out;
}

int32_t fake_next_token(const std::vector<int32_t>& context) {
  if (context.size() >= 12 && context.size() > 1 && context[1] == 63) return 1;
  uint64_t h = 1469598103934665603ull;
  for (int32_t t : context) h = (h ^ static_cast<uint64_t>(t)) * 1099511628211ull;
  // Never </s> or <s> by chance, so lengths are predictable.
  return static_cast<int32_t>(2 + (h >> 7) % 62);
}

std::vector<int32_t> reference_continuation(std::vector<int32_t> prompt, int n, bool stop_at_eos) {
  std::vector<int32_t> out;
  while (static_cast<int>(out.size()) < n) {
    const int32_t t = fake_next_token(prompt);
    out.push_back(t);
    prompt.push_back(t);
    if (stop_at_eos && t == 1) break;
  }
  return out;
}

FakeRunner::FakeRunner(int64_t max_model_len) {
  info_.architecture = "FakeForTests";
  info_.vocab_size = 64;
  info_.hidden_size = 8;
  info_.num_layers = 1;
  info_.num_heads = 1;
  info_.num_kv_heads = 1;
  info_.head_dim = 8;
  info_.max_model_len = max_model_len;
  info_.chat_template =
      "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
      "{% if add_generation_prompt %}<assistant>{% endif %}";
  info_.bos_token = "<s>";
  info_.eos_token = "</s>";
}

void FakeRunner::allocate_kv_cache(int num_blocks, int block_size, model::KvDtype) {
  num_blocks_ = num_blocks;
  block_size_ = block_size;
  kv_.assign(static_cast<size_t>(num_blocks) * block_size, -1);
}

void FakeRunner::close_gate() {
  std::lock_guard lock(gate_mu_);
  gate_open_ = false;
}

void FakeRunner::open_gate() {
  {
    std::lock_guard lock(gate_mu_);
    gate_open_ = true;
  }
  gate_cv_.notify_all();
}

Tensor FakeRunner::forward(const model::StepBatch& b) {
  {
    std::unique_lock lock(gate_mu_);
    ++waiting_at_gate;
    gate_cv_.wait(lock, [&] { return gate_open_; });
    --waiting_at_gate;
  }
  ++forwards;
  max_batch_seqs = std::max(max_batch_seqs.load(), b.n_seqs());
  for (int32_t t : b.token_ids)
    if (t == fail_on_token.load()) throw Error(APH_ERR_DEVICE, "fake device fault");
  if (b.positions.size() != b.token_ids.size() || b.slot_mapping.size() != b.token_ids.size())
    throw Error(APH_ERR_INTERNAL, "malformed StepBatch");
  for (size_t i = 0; i < b.token_ids.size(); ++i) kv_.at(b.slot_mapping[i]) = b.token_ids[i];

  const int64_t vocab = info_.vocab_size;
  Tensor logits = Tensor::zeros({static_cast<int64_t>(b.logits_indices.size()), vocab},
                                APH_DTYPE_F32, APH_DEVICE_CPU);
  for (size_t r = 0; r < b.logits_indices.size(); ++r) {
    const int32_t row = b.logits_indices[r];
    int s = 0;
    while (b.query_start[s + 1] <= row) ++s;
    const int32_t pos = b.positions[row];
    std::vector<int32_t> context;
    for (int32_t p = 0; p <= pos; ++p) {
      const int32_t block =
          b.block_tables[static_cast<size_t>(s) * b.max_blocks_per_seq + p / block_size_];
      context.push_back(kv_.at(static_cast<size_t>(block) * block_size_ + p % block_size_));
    }
    if (pos + 1 != b.context_lens[s])
      throw Error(APH_ERR_INTERNAL, "logits row is not the last token");
    const int32_t next = fake_next_token(context);
    float* out = logits.as<float>() + r * vocab;
    for (int64_t v = 0; v < vocab; ++v) out[v] = -static_cast<float>((v * 7919) % 13);
    out[next] = 100.0f;  // certain under any sampling
  }
  return logits;
}

namespace {

int greedy_marker;

aph_status greedy_row_create(void*, const char*, void** params, aph_error*) {
  *params = &greedy_marker;
  return APH_OK;
}

void greedy_row_destroy(void*, void*) {}

aph_status greedy_apply(void*, const aph_sampler_batch* batch, aph_stream, aph_error* err) {
  const int64_t vocab = batch->logits.shape[1];
  auto* chosen = static_cast<int32_t*>(batch->chosen.data);
  const auto* logits = static_cast<const float*>(batch->logits.data);
  for (uint32_t r = 0; r < batch->n_rows; ++r) {
    if (batch->rows[r].params == nullptr || chosen[r] >= 0) continue;
    const float* row = logits + r * batch->logits.strides[0];
    int32_t best = 0;
    for (int32_t v = 1; v < vocab; ++v)
      if (row[v] > row[best]) best = v;
    chosen[r] = best;
  }
  (void)err;
  return APH_OK;
}

// Built field by field so fields appended to the ABI later start zeroed.
aph_sampler_stage make_greedy_stage() {
  aph_sampler_stage s{};
  s.size = sizeof(aph_sampler_stage);
  s.name = "test_greedy";
  s.priority_aliases = "";
  s.kobold_id = -1;
  s.default_position = 1000;
  s.flags = APH_SAMPLER_SELECTS;
  s.field_aliases = "";
  s.row_create = greedy_row_create;
  s.row_destroy = greedy_row_destroy;
  s.apply = greedy_apply;
  return s;
}

const aph_sampler_stage greedy_stage = make_greedy_stage();

aph_sampler_vtable make_greedy_vtable() {
  aph_sampler_vtable v{};
  v.size = sizeof(aph_sampler_vtable);
  v.n_stages = 1;
  v.stages = &greedy_stage;
  return v;
}

const aph_sampler_vtable greedy_vtable = make_greedy_vtable();

}  // namespace

PluginRegistry greedy_sampler_registry() {
  PluginRegistry r;
  r.samplers.push_back({"test-greedy", &greedy_vtable, nullptr});
  return r;
}

}  // namespace aph::test
