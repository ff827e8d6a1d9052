#include "plugins/samplers/stages/banned_strings.hpp"

#include <algorithm>

#include "plugins/samplers/cpu_math.hpp"

namespace aph::samplers {

std::span<const aph_sampler_field> BannedStringsStage::fields() {
  static const aph_sampler_field f[] = {
      field_other("banned_strings", APH_FIELD_STRING_LIST, nullptr, "phrases never completed in the output"),
      field_other("banned_tokens", APH_FIELD_JSON, nullptr, "Kobold: ids (ints) or phrases (strings) to ban"),
  };
  return f;
}

std::unique_ptr<BannedStringsStage::Params> BannedStringsStage::create(const Request& r, PluginState& st) {
  auto p = std::make_unique<Params>();
  for (std::string& s : r.string_list("banned_strings")) {
    if (!s.empty()) p->phrases.push_back(std::move(s));
  }
  if (const boost::json::value* v = r.value("banned_tokens"); v != nullptr && v->is_array()) {
    for (const auto& e : v->as_array()) {
      if (e.is_string() && !e.get_string().empty()) p->phrases.emplace_back(e.get_string());
    }
  }
  if (p->phrases.empty()) return nullptr;
  p->vocab = st.vocab();
  if (!p->vocab || !p->vocab->has_text) {
    throw Error(APH_ERR_UNSUPPORTED, "banned_strings: the engine gave the sampler no vocabulary");
  }
  p->containing = *st.tokens_containing(p->phrases);
  return p;
}

std::vector<int32_t> banned_string_tokens(const BannedStringsStage::Params& p, const int32_t* tokens,
                                          int64_t n_tokens) {
  std::vector<int32_t> out = p.containing;
  const Vocab& vocab = *p.vocab;
  size_t longest = 0;
  for (const std::string& s : p.phrases) longest = std::max(longest, s.size());
  // The last longest-1 bytes of the text so far.
  std::string tail;
  for (int64_t i = n_tokens - 1; i >= 0 && tail.size() + 1 < longest; --i) {
    const int32_t t = tokens[i];
    if (t < 0 || t >= vocab.size()) break;
    tail.insert(0, vocab.bytes[t]);
  }
  if (tail.size() + 1 > longest) tail.erase(0, tail.size() + 1 - longest);
  for (const std::string& s : p.phrases) {
    // Split s = s[0, j) + s[j, end): the tail ends with the first part and a
    // token whose bytes start with the second part completes the phrase.
    for (size_t j = 1; j < s.size(); ++j) {
      if (j > tail.size() || tail.compare(tail.size() - j, j, s, 0, j) != 0) continue;
      const std::string_view rest(s.data() + j, s.size() - j);
      auto first = std::lower_bound(vocab.by_bytes.begin(), vocab.by_bytes.end(), rest,
                                    [&](int32_t id, std::string_view key) { return std::string_view(vocab.bytes[id]) < key; });
      for (auto it = first; it != vocab.by_bytes.end(); ++it) {
        std::string_view b = vocab.bytes[*it];
        if (b.substr(0, rest.size()) != rest) break;
        out.push_back(*it);
      }
    }
  }
  return out;
}

void BannedStringsStage::apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows) {
  for (const auto& r : rows) {
    for (int32_t t : banned_string_tokens(*r.params, r.row->tokens, r.row->n_tokens)) {
      if (t >= 0 && t < r.vocab) r.logits[t] = kNegInf;
    }
  }
}

}  // namespace aph::samplers

#ifdef APH_HAVE_CUDA
#include "plugins/samplers/cuda/device_params.hpp"

namespace aph::samplers {

// The banned ids come from text matching on the host history; only the
// masking runs on the device.
void BannedStringsStage::apply_cuda(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  IdLists lists;
  for (uint32_t i = 0; i < b.n_rows; ++i) {
    if (auto* p = static_cast<Params*>(b.rows[i].params)) {
      lists.add(static_cast<int32_t>(i), banned_string_tokens(*p, b.rows[i].tokens, b.rows[i].n_tokens));
    }
  }
  scatter_lists(st, info.name, lists, b, s);
}

}  // namespace aph::samplers
#endif
