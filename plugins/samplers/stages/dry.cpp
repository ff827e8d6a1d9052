#include "plugins/samplers/stages/dry.hpp"

#include <algorithm>
#include <cmath>

#include "plugins/samplers/cpu_math.hpp"
#include "plugins/samplers/penalty_math.hpp"

namespace aph::samplers {

std::span<const aph_sampler_field> DryStage::fields() {
  static const aph_sampler_field f[] = {
      field_float("dry_multiplier", 0.0, 0.0, kUnbounded, "DRY strength (0 = off)"),
      field_float("dry_base", 1.75, 1.0, kUnbounded, "growth of the penalty per extra repeated token (> 1)"),
      field_int("dry_allowed_length", 2, 0, kUnbounded, "repetitions up to this length are not penalized"),
      field_other("dry_sequence_breakers", APH_FIELD_STRING_LIST, "[\"\\n\",\":\",\"\\\"\",\"*\"]",
                  "text that ends a repetition (tokens containing it)"),
      field_other("dry_sequence_breaker_ids", APH_FIELD_INT_LIST, nullptr, "token ids that end a repetition"),
      field_int("dry_range", 0, 0, kUnbounded, "look at the last N tokens only (0 = all)"),
      field_int("dry_max_ngram", 12, 1, 1024, "longest repetition measured"),
      field_int("dry_max_occurrences", 8, 1, 1024, "newest occurrences of the last token examined"),
  };
  return f;
}

std::unique_ptr<DryStage::Params> DryStage::create(const Request& r, PluginState& st) {
  auto p = std::make_unique<Params>();
  p->multiplier = static_cast<float>(r.number("dry_multiplier"));
  if (p->multiplier == 0.0f) return nullptr;
  p->base = static_cast<float>(r.number("dry_base"));
  if (!(p->base > 1.0f)) throw invalid_argument("dry_base: must be greater than 1");
  p->allowed_length = static_cast<int32_t>(std::min<int64_t>(r.integer("dry_allowed_length"), 1 << 30));
  p->range = static_cast<int32_t>(std::min<int64_t>(r.integer("dry_range"), 1 << 30));
  p->max_ngram = static_cast<int32_t>(r.integer("dry_max_ngram"));
  p->max_occurrences = static_cast<int32_t>(r.integer("dry_max_occurrences"));
  for (int64_t id : r.int_list("dry_sequence_breaker_ids")) p->breakers.push_back(static_cast<int32_t>(id));
  std::vector<std::string> texts = r.string_list("dry_sequence_breakers");
  if (!texts.empty()) {
    std::shared_ptr<const std::vector<int32_t>> ids = st.tokens_containing(texts);
    p->breakers.insert(p->breakers.end(), ids->begin(), ids->end());
  }
  std::sort(p->breakers.begin(), p->breakers.end());
  p->breakers.erase(std::unique(p->breakers.begin(), p->breakers.end()), p->breakers.end());
  return p;
}

std::vector<DryPenalty> dry_matches(const DryStage::Params& p, const int32_t* tokens, int64_t n_tokens) {
  std::vector<DryPenalty> out;
  const int64_t start = p.range > 0 ? std::max<int64_t>(0, n_tokens - p.range) : 0;
  const int32_t* seq = tokens + start;
  const int64_t n = n_tokens - start;
  if (n < 2) return out;
  auto is_breaker = [&](int32_t t) { return std::binary_search(p.breakers.begin(), p.breakers.end(), t); };
  // The repeated suffix may not contain a breaker; equal tokens mean the
  // earlier copy contains none either, so one cap covers both.
  int64_t cap = 0;
  while (cap < n && cap < p.max_ngram && !is_breaker(seq[n - 1 - cap])) ++cap;
  if (cap == 0 || cap < p.allowed_length) return out;
  const int32_t last = seq[n - 1];
  int32_t seen = 0;
  for (int64_t j = n - 2; j >= 0 && seen < p.max_occurrences; --j) {
    if (seq[j] != last) continue;
    ++seen;
    int64_t len = 1;
    while (len < cap && j - len >= 0 && seq[j - len] == seq[n - 1 - len]) ++len;
    if (len < p.allowed_length) continue;
    const int32_t next = seq[j + 1];
    auto it = std::find_if(out.begin(), out.end(), [&](const DryPenalty& d) { return d.token == next; });
    if (it == out.end()) out.push_back({next, static_cast<int32_t>(len)});
    else it->length = std::max<int32_t>(it->length, static_cast<int32_t>(len));
  }
  return out;
}

void DryStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  for (const auto& r : rows) {
    const Params& p = *r.params;
    for (const DryPenalty& d : dry_matches(p, r.row->tokens, r.row->n_tokens)) {
      if (d.token < 0 || d.token >= r.vocab) continue;
      r.logits[d.token] -= dry_penalty(p.multiplier, p.base, d.length, p.allowed_length);
    }
  }
}

}  // namespace aph::samplers

#ifdef APH_HAVE_CUDA
#include "plugins/samplers/cuda/device_params.hpp"

namespace aph::samplers {

void DryStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  std::vector<cuda::DryRow> rows;
  std::vector<int32_t> breakers;
  for (uint32_t i = 0; i < b.n_rows; ++i) {
    auto* p = static_cast<Params*>(b.rows[i].params);
    if (p == nullptr) continue;
    if (b.rows[i].tokens_device == nullptr && b.rows[i].n_tokens > 0) {
      throw invalid_argument("sampler stage dry: row " + std::to_string(i) + " has no device token history");
    }
    rows.push_back({static_cast<int32_t>(i), b.rows[i].tokens_device, static_cast<int32_t>(b.rows[i].n_tokens),
                    p->allowed_length, p->max_ngram, p->max_occurrences, p->range, p->multiplier, p->base,
                    static_cast<int32_t>(breakers.size()), static_cast<int32_t>(p->breakers.size())});
    breakers.insert(breakers.end(), p->breakers.begin(), p->breakers.end());
  }
  if (rows.empty()) return;
  const auto table = row_table(st, "dry.rows", rows, b, s);
  const auto breaker_table = row_table<1024>(st, "dry.breakers", breakers, b, s);
  check_launch(cuda::launch_dry(logits_view(b), static_cast<int32_t>(rows.size()), table, breaker_table, s),
               info.name);
}

}  // namespace aph::samplers
#endif
