#include "plugins/samplers/stages/masks.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "plugins/samplers/cpu_math.hpp"

#ifdef APH_HAVE_CUDA
#include "plugins/samplers/cuda/device_params.hpp"
#endif


namespace aph::samplers {

// A JSON token id as an integer: doubles with a fraction and integers beyond
// int64 are errors naming the field (Boost.JSON's to_number would throw a
// non-aph exception for them).
static int64_t json_token_id(const boost::json::value& v, const char* field) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64() && v.get_uint64() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return static_cast<int64_t>(v.get_uint64());
  if (v.is_double() && std::isfinite(v.get_double()) && std::floor(v.get_double()) == v.get_double() &&
      std::fabs(v.get_double()) < 9.0e15)
    return static_cast<int64_t>(v.get_double());
  throw invalid_argument(std::string(field) + ": " + boost::json::serialize(v) + " is not a token id");
}

int32_t checked_token_id(int64_t id, const char* field, const PluginState& st) {
  std::shared_ptr<const Vocab> vocab = st.vocab();
  const int64_t limit = vocab && vocab->size() > 0 ? vocab->size() : (int64_t{1} << 31) - 1;
  if (id < 0 || id >= limit) {
    throw invalid_argument(std::string(field) + ": token id " + std::to_string(id) + " is outside the vocabulary");
  }
  return static_cast<int32_t>(id);
}

namespace {
void mask_ids_cpu(float* logits, int64_t vocab, const std::vector<int32_t>& ids) {
  for (int32_t id : ids) {
    if (id >= 0 && id < vocab) logits[id] = kNegInf;
  }
}
}  // namespace

// ---- min_tokens ----------------------------------------------------------

std::span<const aph_sampler_field> MinTokensStage::fields() {
  static const aph_sampler_field f[] = {
      field_int("min_tokens", 0, 0, kUnbounded, "end-of-generation tokens are masked until this many are generated"),
      field_bool("ban_eos_token", false, "never generate EOS (SillyTavern)"),
      field_bool("use_default_badwordsids", false, "never generate EOS (Kobold)"),
  };
  return f;
}

std::unique_ptr<MinTokensStage::Params> MinTokensStage::create(const Request& r, PluginState& st) {
  auto p = std::make_unique<Params>();
  p->min_tokens = r.integer("min_tokens");
  p->ban_always = r.boolean("ban_eos_token") || r.boolean("use_default_badwordsids");
  if (p->min_tokens == 0 && !p->ban_always) return nullptr;
  if (std::shared_ptr<const Vocab> v = st.vocab()) {
    p->eog = v->eog_token_ids;
    if (v->eos_token_id >= 0 && std::find(p->eog.begin(), p->eog.end(), v->eos_token_id) == p->eog.end()) {
      p->eog.push_back(v->eos_token_id);
    }
  }
  return p;
}

namespace {
bool eos_masked_now(const MinTokensStage::Params& p, const aph_sampler_row& row) {
  return p.ban_always || static_cast<int64_t>(row.step) < p.min_tokens;
}
}  // namespace

void MinTokensStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  for (const auto& r : rows) {
    if (!eos_masked_now(*r.params, *r.row)) continue;
    mask_ids_cpu(r.logits, r.vocab, r.params->eog);
  }
}

// ---- logit_bias ----------------------------------------------------------

std::span<const aph_sampler_field> LogitBiasStage::fields() {
  static const aph_sampler_field f[] = {
      field_other("logit_bias", APH_FIELD_JSON, nullptr, "object mapping token ids (as strings) to a bias added to the logit"),
  };
  return f;
}

std::unique_ptr<LogitBiasStage::Params> LogitBiasStage::create(const Request& r, PluginState& st) {
  const boost::json::value* v = r.value("logit_bias");
  if (v == nullptr) return nullptr;
  auto p = std::make_unique<Params>();
  auto add = [&](int64_t id, const boost::json::value& b) {
    double bias = 0;
    if (b.is_double()) bias = b.get_double();
    else if (b.is_int64()) bias = static_cast<double>(b.get_int64());
    else if (b.is_uint64()) bias = static_cast<double>(b.get_uint64());
    else throw invalid_argument("logit_bias: bias of token " + std::to_string(id) + " is not a number");
    if (!std::isfinite(bias)) throw invalid_argument("logit_bias: bias must be finite");
    p->ids.push_back(checked_token_id(id, "logit_bias", st));
    p->bias.push_back(static_cast<float>(bias));
  };
  if (v->is_object()) {
    for (const auto& kv : v->as_object()) {
      int64_t id = 0;
      std::string_view key = kv.key();
      auto res = std::from_chars(key.data(), key.data() + key.size(), id);
      if (res.ec != std::errc() || res.ptr != key.data() + key.size()) {
        throw invalid_argument("logit_bias: key '" + std::string(key) + "' is not a token id");
      }
      add(id, kv.value());
    }
  } else if (v->is_array()) {  // [[id, bias], ...] as some Kobold clients send it
    for (const auto& e : v->as_array()) {
      if (!e.is_array() || e.as_array().size() != 2 || !e.as_array()[0].is_number()) {
        throw invalid_argument("logit_bias: expected an object or [[id, bias], ...]");
      }
      add(json_token_id(e.as_array()[0], "logit_bias"), e.as_array()[1]);
    }
  } else {
    throw invalid_argument("logit_bias: expected an object mapping token ids to numbers");
  }
  if (p->ids.empty()) return nullptr;
  return p;
}

void LogitBiasStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.params->ids.size(); ++i) {
      if (r.params->ids[i] < r.vocab) r.logits[r.params->ids[i]] += r.params->bias[i];
    }
  }
}

// ---- token bans ----------------------------------------------------------

std::span<const aph_sampler_field> TokenBansStage::fields() {
  static const aph_sampler_field f[] = {
      field_other("custom_token_bans", APH_FIELD_JSON, nullptr, "token ids never generated: [int] or \"1,2,3\""),
      field_other("banned_tokens", APH_FIELD_JSON, nullptr, "Kobold: ids (ints) or phrases (strings) to ban"),
  };
  return f;
}

namespace {
void collect_ids(const boost::json::value* v, const char* field, const PluginState& st, std::vector<int32_t>& out) {
  if (v == nullptr) return;
  if (v->is_string()) {  // Kobold sends "1, 2,3"
    std::string_view s = v->get_string();
    size_t pos = 0;
    while (pos < s.size()) {
      size_t end = s.find(',', pos);
      if (end == std::string_view::npos) end = s.size();
      std::string_view item = s.substr(pos, end - pos);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      if (!item.empty()) {
        int64_t id = 0;
        auto res = std::from_chars(item.data(), item.data() + item.size(), id);
        if (res.ec != std::errc() || res.ptr != item.data() + item.size()) {
          throw invalid_argument(std::string(field) + ": '" + std::string(item) + "' is not a token id");
        }
        out.push_back(checked_token_id(id, field, st));
      }
      pos = end + 1;
    }
    return;
  }
  if (!v->is_array()) throw invalid_argument(std::string(field) + ": expected an array of token ids");
  for (const auto& e : v->as_array()) {
    if (e.is_string()) continue;  // a phrase: the banned_strings stage handles it
    if (!e.is_int64() && !e.is_uint64()) throw invalid_argument(std::string(field) + ": expected token ids");
    out.push_back(checked_token_id(json_token_id(e, field), field, st));
  }
}
}  // namespace

std::unique_ptr<TokenBansStage::Params> TokenBansStage::create(const Request& r, PluginState& st) {
  auto p = std::make_unique<Params>();
  collect_ids(r.value("custom_token_bans"), "custom_token_bans", st, p->ids);
  collect_ids(r.value("banned_tokens"), "banned_tokens", st, p->ids);
  if (p->ids.empty()) return nullptr;
  std::sort(p->ids.begin(), p->ids.end());
  p->ids.erase(std::unique(p->ids.begin(), p->ids.end()), p->ids.end());
  return p;
}

void TokenBansStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  for (const auto& r : rows) mask_ids_cpu(r.logits, r.vocab, r.params->ids);
}

// ---- allowed_token_ids ---------------------------------------------------

std::span<const aph_sampler_field> AllowedTokensStage::fields() {
  static const aph_sampler_field f[] = {
      field_other("allowed_token_ids", APH_FIELD_INT_LIST, nullptr, "only these token ids may be generated"),
  };
  return f;
}

std::unique_ptr<AllowedTokensStage::Params> AllowedTokensStage::create(const Request& r, PluginState& st) {
  std::vector<int64_t> ids = r.int_list("allowed_token_ids");
  if (ids.empty()) return nullptr;
  auto p = std::make_unique<Params>();
  for (int64_t id : ids) p->ids.push_back(checked_token_id(id, "allowed_token_ids", st));
  std::sort(p->ids.begin(), p->ids.end());
  p->ids.erase(std::unique(p->ids.begin(), p->ids.end()), p->ids.end());
  return p;
}

void AllowedTokensStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  for (const auto& r : rows) {
    size_t next = 0;
    for (int64_t t = 0; t < r.vocab; ++t) {
      while (next < r.params->ids.size() && r.params->ids[next] < t) ++next;
      if (next >= r.params->ids.size() || r.params->ids[next] != t) r.logits[t] = kNegInf;
    }
  }
}

}  // namespace aph::samplers

#ifdef APH_HAVE_CUDA
namespace aph::samplers {

void MinTokensStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  IdLists lists;
  for (uint32_t i = 0; i < b.n_rows; ++i) {
    auto* p = static_cast<Params*>(b.rows[i].params);
    if (p == nullptr || !eos_masked_now(*p, b.rows[i])) continue;
    lists.add(static_cast<int32_t>(i), p->eog);
  }
  scatter_lists(st, info.name, lists, b, s);
}

void LogitBiasStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  IdLists lists;
  for (uint32_t i = 0; i < b.n_rows; ++i) {
    auto* p = static_cast<Params*>(b.rows[i].params);
    if (p == nullptr) continue;
    lists.add(static_cast<int32_t>(i), p->ids);
    lists.values.insert(lists.values.end(), p->bias.begin(), p->bias.end());
  }
  scatter_lists(st, info.name, lists, b, s);
}

void TokenBansStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  IdLists lists;
  for (uint32_t i = 0; i < b.n_rows; ++i) {
    if (auto* p = static_cast<Params*>(b.rows[i].params)) lists.add(static_cast<int32_t>(i), p->ids);
  }
  scatter_lists(st, info.name, lists, b, s);
}

void AllowedTokensStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  IdLists lists;
  for (uint32_t i = 0; i < b.n_rows; ++i) {
    if (auto* p = static_cast<Params*>(b.rows[i].params)) lists.add(static_cast<int32_t>(i), p->ids);
  }
  if (lists.rows.empty()) return;
  const DeviceLists d = upload_lists(st, std::string(info.name) + ".lists", lists, b, s);
  check_launch(cuda::launch_keep_only(logits_view(b), static_cast<int32_t>(lists.rows.size()), d.rows, d.offsets,
                                      d.ids, s),
               info.name);
}

}  // namespace aph::samplers
#endif
