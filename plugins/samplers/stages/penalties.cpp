#include "plugins/samplers/stages/penalties.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "plugins/samplers/cpu_math.hpp"
#include "plugins/samplers/penalty_math.hpp"

namespace aph::samplers {

std::span<const aph_sampler_field> PenaltiesStage::fields() {
  static const aph_sampler_field f[] = {
      field_float("repetition_penalty", 1.0, 1.0, kUnbounded, "divides positive / multiplies negative logits of seen tokens"),
      field_float("frequency_penalty", 0.0, -2.0, 2.0, "subtracted once per occurrence in the output"),
      field_float("presence_penalty", 0.0, -2.0, 2.0, "subtracted once if the token occurs in the output"),
      field_int("rep_pen_range", 0, 0, kUnbounded, "repetition penalty looks at the last N tokens only (0 = all)"),
      field_float("rep_pen_slope", 0.0, 0.0, kUnbounded, "Kobold: older tokens in the range get a smaller penalty (0 = flat)"),
  };
  return f;
}

std::unique_ptr<PenaltiesStage::Params> PenaltiesStage::create(const Request& r, PluginState&) {
  auto p = std::make_unique<Params>();
  p->repetition = static_cast<float>(r.number("repetition_penalty"));
  p->frequency = static_cast<float>(r.number("frequency_penalty"));
  p->presence = static_cast<float>(r.number("presence_penalty"));
  p->range = r.integer("rep_pen_range");
  p->slope = static_cast<float>(r.number("rep_pen_slope"));
  if (p->repetition == 1.0f && p->frequency == 0.0f && p->presence == 0.0f) return nullptr;
  return p;
}

void PenaltiesStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  std::unordered_map<int32_t, float> rep;     // token -> penalty of its newest occurrence
  std::unordered_map<int32_t, int32_t> count; // output occurrences
  for (const auto& r : rows) {
    const Params& p = *r.params;
    const aph_sampler_row& row = *r.row;
    rep.clear();
    count.clear();
    if (p.repetition != 1.0f) {
      const int64_t start = p.range > 0 ? std::max<int64_t>(0, row.n_tokens - p.range) : 0;
      const int64_t n = row.n_tokens - start;
      for (int64_t i = start; i < row.n_tokens; ++i) {
        rep[row.tokens[i]] = rep_pen_at(p.repetition, p.slope, i - start, n);
      }
    }
    if (p.frequency != 0.0f || p.presence != 0.0f) {
      for (int64_t i = row.n_prompt; i < row.n_tokens; ++i) ++count[row.tokens[i]];
    }
    for (const auto& [tok, pen] : rep) {
      if (tok < 0 || tok >= r.vocab) continue;
      float& x = r.logits[tok];
      x = x > 0 ? x / pen : x * pen;
    }
    for (const auto& [tok, c] : count) {
      if (tok < 0 || tok >= r.vocab) continue;
      r.logits[tok] -= p.frequency * static_cast<float>(c) + p.presence;
    }
  }
}

// ---- no_repeat_ngram -----------------------------------------------------

std::span<const aph_sampler_field> NoRepeatNgramStage::fields() {
  static const aph_sampler_field f[] = {
      field_int("no_repeat_ngram_size", 0, 0, kUnbounded, "no n-gram of this size occurs twice (0 = off)"),
  };
  return f;
}

std::unique_ptr<NoRepeatNgramStage::Params> NoRepeatNgramStage::create(const Request& r, PluginState&) {
  int64_t n = r.integer("no_repeat_ngram_size");
  if (n == 0) return nullptr;
  auto p = std::make_unique<Params>();
  p->n = n;
  return p;
}

std::vector<int32_t> ngram_banned_tokens(const int32_t* tokens, int64_t len, int64_t n) {
  std::vector<int32_t> banned;
  if (n <= 0 || len < n - 1) return banned;
  if (n == 1) {  // every seen token would repeat a 1-gram
    banned.assign(tokens, tokens + len);
  } else {
    // Positions i where tokens[i .. i+n-2] equals the last n-1 tokens and a
    // next token exists: compare from the end, so a mismatch exits early.
    const int32_t* tail = tokens + len - (n - 1);
    for (int64_t i = 0; i + n - 1 < len; ++i) {
      if (tokens[i + n - 2] != tail[n - 2]) continue;
      bool same = true;
      for (int64_t k = n - 3; k >= 0; --k) {
        if (tokens[i + k] != tail[k]) {
          same = false;
          break;
        }
      }
      if (same) banned.push_back(tokens[i + n - 1]);
    }
  }
  std::sort(banned.begin(), banned.end());
  banned.erase(std::unique(banned.begin(), banned.end()), banned.end());
  return banned;
}

void NoRepeatNgramStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  for (const auto& r : rows) {
    for (int32_t t : ngram_banned_tokens(r.row->tokens, r.row->n_tokens, r.params->n)) {
      if (t >= 0 && t < r.vocab) r.logits[t] = kNegInf;
    }
  }
}

}  // namespace aph::samplers

#ifdef APH_HAVE_CUDA
#include "plugins/samplers/cuda/device_params.hpp"

namespace aph::samplers {

void PenaltiesStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  std::vector<cuda::PenaltyRow> rows;
  for (uint32_t i = 0; i < b.n_rows; ++i) {
    auto* p = static_cast<Params*>(b.rows[i].params);
    if (p == nullptr) continue;
    if (b.rows[i].tokens_device == nullptr && b.rows[i].n_tokens > 0) {
      throw invalid_argument("sampler stage penalties: row " + std::to_string(i) + " has no device token history");
    }
    rows.push_back({static_cast<int32_t>(i), b.rows[i].tokens_device, static_cast<int32_t>(b.rows[i].n_prompt),
                    static_cast<int32_t>(b.rows[i].n_tokens), p->repetition, p->frequency, p->presence, p->slope,
                    static_cast<int32_t>(std::min<int64_t>(p->range, INT32_MAX))});
  }
  if (rows.empty()) return;
  const auto table_rows = row_table(st, "penalties.rows", rows, b, s);
  const size_t bytes = rows.size() * static_cast<size_t>(b.logits.shape[1]) * sizeof(int32_t);
  auto* table = static_cast<int32_t*>(st.filled_scratch("penalties.table", b.logits.device, bytes, 0x00, s));
  auto* newest = static_cast<int32_t*>(st.filled_scratch("penalties.newest", b.logits.device, bytes, 0xFF, s));
  const std::string error = cuda::launch_penalties(logits_view(b), static_cast<int32_t>(rows.size()), table_rows, table,
                                                   newest, s);
  if (!error.empty()) {  // the tables may be left half-filled
    st.drop_scratch("penalties.table");
    st.drop_scratch("penalties.newest");
  }
  check_launch(error, info.name);
}

void NoRepeatNgramStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  IdLists lists;
  for (uint32_t i = 0; i < b.n_rows; ++i) {
    if (auto* p = static_cast<Params*>(b.rows[i].params)) {
      lists.add(static_cast<int32_t>(i), ngram_banned_tokens(b.rows[i].tokens, b.rows[i].n_tokens, p->n));
    }
  }
  scatter_lists(st, info.name, lists, b, s);
}

}  // namespace aph::samplers
#endif
