#include "core/text/tokenizer_impl.hpp"

#include <algorithm>
#include <cstdio>

#include "core/common/error.hpp"
#include "core/text/byte_level.hpp"
#include "core/text/utf8.hpp"

namespace aph::text {
namespace {

constexpr size_t kMaxCachedWordBytes = 128;
constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // ▁
constexpr size_t kMaxCachedWords = 1 << 16;

// Tokens that end a turn even when the file names only eos.
constexpr std::string_view kEndOfGenerationTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>",
    "<|end_of_text|>", "<|eom_id|>", "<｜end▁of▁sentence｜>"};

// True when the token has a '▁' right after a character that is not one, so
// it could span the start of a word in SentencePiece-escaped text.
bool spans_space_mark_start(const std::string& t) {
  for (size_t p = t.find(kSpaceMark, 1); p != std::string::npos; p = t.find(kSpaceMark, p + 1)) {
    if (p < kSpaceMark.size() || t.compare(p - kSpaceMark.size(), kSpaceMark.size(), kSpaceMark) != 0) return true;
  }
  return false;
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  if (from.empty()) return text;
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(from, pos);
    if (hit == std::string::npos) break;
    out.append(text, pos, hit - pos);
    out.append(to);
    pos = hit + from.size();
  }
  out.append(text, pos, std::string::npos);
  return out;
}

// <0xNN> -> the byte, for SentencePiece byte tokens.
std::optional<uint8_t> parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return std::nullopt;
  unsigned value = 0;
  for (char c : text.substr(3, 2)) {
    value <<= 4;
    if (c >= '0' && c <= '9') value |= static_cast<unsigned>(c - '0');
    else if (c >= 'A' && c <= 'F') value |= static_cast<unsigned>(c - 'A' + 10);
    else if (c >= 'a' && c <= 'f') value |= static_cast<unsigned>(c - 'a' + 10);
    else return std::nullopt;
  }
  return static_cast<uint8_t>(value);
}

std::string byte_token_text(uint8_t byte) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "<0x%02X>", byte);
  return buf;
}

}  // namespace

std::unique_ptr<Tokenizer> build_tokenizer(VocabularySpec spec) {
  return std::make_unique<TokenizerImpl>(std::move(spec));
}

TokenizerImpl::TokenizerImpl(VocabularySpec spec)
    : spec_(std::move(spec)), added_(spec_.added_tokens) {
  const auto n = static_cast<int32_t>(spec_.tokens.size());
  const std::string& src = spec_.source;
  if (n == 0) throw invalid_argument(src + ": the vocabulary has no tokens");
  if (spec_.types.empty()) spec_.types.assign(spec_.tokens.size(), TokenType::normal);
  if (spec_.types.size() != spec_.tokens.size()) {
    throw invalid_argument(src + ": token_type has " + std::to_string(spec_.types.size()) +
                           " entries for " + std::to_string(n) + " tokens");
  }
  if (!spec_.scores.empty() && spec_.scores.size() != spec_.tokens.size()) {
    throw invalid_argument(src + ": scores has " + std::to_string(spec_.scores.size()) +
                           " entries for " + std::to_string(n) + " tokens");
  }
  auto check_special = [&](int32_t& id, const char* what) {
    if (id >= n) throw invalid_argument(src + ": " + what + " id " + std::to_string(id) +
                                        " is outside the vocabulary of " + std::to_string(n));
    if (id < 0) id = -1;
  };
  check_special(spec_.bos_id, "bos token");
  check_special(spec_.eos_id, "eos token");
  check_special(spec_.unk_id, "unknown token");
  check_special(spec_.pad_id, "padding token");
  for (int32_t& id : spec_.extra_eog_ids) check_special(id, "end-of-generation token");
  for (const auto& t : spec_.added_tokens) {
    if (t.id < 0 || t.id >= n) {
      throw invalid_argument(src + ": added token '" + t.text + "' has id " + std::to_string(t.id) +
                             " outside the vocabulary of " + std::to_string(n));
    }
  }
  if (spec_.add_bos && spec_.bos_id < 0) spec_.add_bos = false;
  if (spec_.add_eos && spec_.eos_id < 0) spec_.add_eos = false;

  token_to_id_.reserve(spec_.tokens.size());
  for (int32_t id = 0; id < n; ++id) token_to_id_.emplace(spec_.tokens[id], id);  // first wins

  decoded_.resize(spec_.tokens.size());
  for (int32_t id = 0; id < n; ++id) {
    const std::string& text = spec_.tokens[id];
    const TokenType type = spec_.types[id];
    if (type == TokenType::normal || type == TokenType::undefined) {
      decoded_[id] = spec_.kind == ModelKind::byte_level_bpe ? byte_level_decode(text)
                                                            : replace_all(text, kSpaceMark, " ");
    } else if (type == TokenType::byte) {
      const auto b = parse_byte_token(text);
      decoded_[id] = b ? std::string(1, static_cast<char>(*b)) : text;
    } else if (type == TokenType::unused) {
      decoded_[id].clear();
    } else {
      decoded_[id] = text;  // control, user-defined and unknown tokens read as stored
    }
  }

  if (spec_.eos_id >= 0) eog_ids_.push_back(spec_.eos_id);
  for (int32_t id : spec_.extra_eog_ids)
    if (id >= 0) eog_ids_.push_back(id);
  for (std::string_view t : kEndOfGenerationTexts) {
    const int32_t id = find_id(token_to_id_, t);
    if (id >= 0 && spec_.types[id] == TokenType::control) eog_ids_.push_back(id);
  }
  std::sort(eog_ids_.begin(), eog_ids_.end());
  eog_ids_.erase(std::unique(eog_ids_.begin(), eog_ids_.end()), eog_ids_.end());

  for (int b = 0; b < 256; ++b) {
    int32_t id = find_id(token_to_id_, byte_token_text(static_cast<uint8_t>(b)));
    if (id < 0 && spec_.kind == ModelKind::sentencepiece_scores) {
      id = find_id(token_to_id_, std::string(1, static_cast<char>(b)));
      if (id < 0) id = spec_.unk_id;
    }
    byte_token_[b] = id;
  }

  switch (spec_.kind) {
    case ModelKind::sentencepiece_scores:
      if (spec_.scores.empty()) throw invalid_argument(src + ": a SentencePiece vocabulary needs scores");
      spm_view_ = SpmVocabView{&token_to_id_, &spec_.scores, byte_token_};
      split_at_space_marks_ = std::none_of(spec_.tokens.begin(), spec_.tokens.end(), spans_space_mark_start);
      break;
    case ModelKind::byte_level_bpe:
      merges_.emplace(token_to_id_, n, spec_.merges);
      for (int b = 0; b < 256; ++b) {
        const std::string& ch = byte_level_char(static_cast<uint8_t>(b));
        int32_t symbol = find_id(token_to_id_, ch);
        if (symbol < 0) symbol = merges_->interned_symbol(ch);
        byte_symbol_[b] = symbol;
      }
      break;
    case ModelKind::char_bpe:
      merges_.emplace(token_to_id_, n, spec_.merges);
      // Without a pre-tokenizer HF merges the whole text as one word; the
      // same holds word by word when no token or merge result spans a '▁'.
      split_at_space_marks_ =
          spec_.pre_tokenizer.empty() &&
          std::none_of(spec_.tokens.begin(), spec_.tokens.end(), spans_space_mark_start) &&
          std::none_of(spec_.merges.begin(), spec_.merges.end(),
                       [](const auto& m) { return spans_space_mark_start(m.first + m.second); });
      break;
  }
}

void TokenizerImpl::check_id(int32_t id) const {
  if (id < 0 || id >= vocab_size()) {
    throw invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary of " +
                           std::to_string(vocab_size()));
  }
}

std::vector<int32_t> TokenizerImpl::encode(std::string_view text, const EncodeOptions& options) const {
  // Byte-level BPE could take any bytes, but PCRE2 and the references work
  // on text: ill-formed input is read as Python's errors="replace" reads it.
  std::string repaired;
  if (!is_valid_utf8(text)) {
    repaired = to_valid_utf8(text);
    text = repaired;
  }
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (options.add_special && spec_.add_bos) out.push_back(spec_.bos_id);

  thread_local std::vector<Fragment> fragments;
  added_.partition(text, options.parse_special, fragments);
  bool after_token = false;
  for (const Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_token = true;
    } else {
      encode_segment(f.text, f.text.data() == text.data(), after_token, out);
      after_token = false;
    }
  }
  if (options.add_special && spec_.add_eos) out.push_back(spec_.eos_id);
  return out;
}

void TokenizerImpl::encode_segment(std::string_view segment, bool first_segment, bool after_token,
                                   std::vector<int32_t>& out) const {
  std::string rewritten;
  if (!spec_.text_rules.empty()) {
    rewritten.assign(segment);
    for (const TextRule& rule : spec_.text_rules) {
      switch (rule.kind) {
        case TextRule::Kind::replace:
          rewritten = replace_all(std::move(rewritten), rule.from, rule.to);
          break;
        case TextRule::Kind::lowercase:
          for (char& c : rewritten)
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
          break;
        case TextRule::Kind::prepend: {
          bool applies = false;
          switch (rule.when) {
            case PrefixWhen::every_segment: applies = true; break;
            case PrefixWhen::first_segment: applies = first_segment; break;
            case PrefixWhen::at_start_or_after_special: applies = first_segment || after_token; break;
          }
          if (applies && rule.unless_present && rewritten.starts_with(rule.to)) applies = false;
          if (applies) rewritten.insert(0, rule.to);
          break;
        }
      }
    }
    segment = rewritten;
  }
  if (segment.empty()) return;
  if (split_at_space_marks_) {
    size_t start = 0;
    for (size_t p = segment.find(kSpaceMark, 1); p != std::string_view::npos;
         p = segment.find(kSpaceMark, p + 1)) {
      const bool after_mark = p >= start + kSpaceMark.size() &&
                              segment.substr(p - kSpaceMark.size(), kSpaceMark.size()) == kSpaceMark;
      if (after_mark || p == start) continue;
      encode_word(segment.substr(start, p - start), out);
      start = p;
    }
    encode_word(segment.substr(start), out);
    return;
  }
  if (spec_.kind == ModelKind::sentencepiece_scores) {
    spm_encode(segment, spm_view_, out);
    return;
  }
  thread_local std::vector<std::string_view> words;
  spec_.pre_tokenizer.split(segment, words);
  for (std::string_view word : words) encode_word(word, out);
}

void TokenizerImpl::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() > kMaxCachedWordBytes) {
    merge_word(word, out);
    return;
  }
  {
    std::lock_guard lock(cache_mutex_);
    auto it = word_cache_.find(word);
    if (it != word_cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t start = out.size();
  merge_word(word, out);
  std::lock_guard lock(cache_mutex_);
  if (word_cache_.size() >= kMaxCachedWords) word_cache_.clear();
  word_cache_.emplace(std::string(word), std::vector<int32_t>(out.begin() + static_cast<ptrdiff_t>(start), out.end()));
}

void TokenizerImpl::initial_byte_level_symbols(std::string_view word,
                                               std::vector<BpeMerges::Symbol>& symbols) const {
  for (uint32_t i = 0; i < word.size(); ++i) {
    symbols.push_back(BpeMerges::Symbol{byte_symbol_[static_cast<uint8_t>(word[i])], i, i + 1});
  }
}

void TokenizerImpl::initial_char_symbols(std::string_view word,
                                         std::vector<BpeMerges::Symbol>& symbols) const {
  uint32_t pos = 0;
  while (pos < word.size()) {
    const auto len = static_cast<uint32_t>(
        std::min<size_t>(utf8_sequence_length(static_cast<uint8_t>(word[pos])), word.size() - pos));
    const int32_t id = find_id(token_to_id_, word.substr(pos, len));
    if (id >= 0) {
      symbols.push_back(BpeMerges::Symbol{id, pos, pos + len});
    } else {
      bool all_bytes = spec_.byte_fallback;
      for (uint32_t i = 0; all_bytes && i < len; ++i)
        all_bytes = byte_token_[static_cast<uint8_t>(word[pos + i])] >= 0;
      if (all_bytes) {
        for (uint32_t i = 0; i < len; ++i) {
          symbols.push_back(
              BpeMerges::Symbol{byte_token_[static_cast<uint8_t>(word[pos + i])], pos + i, pos + i + 1});
        }
      } else if (spec_.unk_id >= 0) {
        if (spec_.fuse_unk && !symbols.empty() && symbols.back().id == spec_.unk_id &&
            symbols.back().end == pos) {
          symbols.back().end = pos + len;
        } else {
          symbols.push_back(BpeMerges::Symbol{spec_.unk_id, pos, pos + len});
        }
      }
      // Without byte fallback or <unk> the character has no token: HF refuses
      // such input; dropping it keeps one bad character from failing a request.
    }
    pos += len;
  }
}

void TokenizerImpl::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  if (spec_.kind == ModelKind::sentencepiece_scores) {
    spm_encode(word, spm_view_, out);
    return;
  }
  if (spec_.ignore_merges) {
    const int32_t whole = spec_.kind == ModelKind::byte_level_bpe
                              ? find_id(token_to_id_, byte_level_encode(word))
                              : find_id(token_to_id_, word);
    if (whole >= 0) {
      out.push_back(whole);
      return;
    }
  }
  thread_local std::vector<BpeMerges::Symbol> symbols;
  symbols.clear();
  if (spec_.kind == ModelKind::byte_level_bpe) {
    initial_byte_level_symbols(word, symbols);
  } else {
    initial_char_symbols(word, symbols);
  }
  merges_->merge(symbols);
  const int32_t n = vocab_size();
  for (const auto& s : symbols) {
    if (s.id >= 0 && s.id < n) {
      out.push_back(s.id);
      continue;
    }
    if (spec_.kind != ModelKind::byte_level_bpe) {
      if (spec_.unk_id >= 0) out.push_back(spec_.unk_id);
      continue;
    }
    // Not a token (a merge result or character the vocabulary lacks):
    // llama.cpp keeps whichever single bytes of its text are tokens.
    const std::string text = byte_level_encode(word.substr(s.begin, s.end - s.begin));
    for (char c : text) {
      const int32_t id = find_id(token_to_id_, std::string_view(&c, 1));
      if (id >= 0) out.push_back(id);
    }
  }
}

std::string TokenizerImpl::token_bytes(int32_t id) const {
  check_id(id);
  return decoded_[id];
}

const std::string& TokenizerImpl::token_text(int32_t id) const {
  check_id(id);
  return spec_.tokens[id];
}

bool TokenizerImpl::is_special(int32_t id) const {
  check_id(id);
  const TokenType t = spec_.types[id];
  return t == TokenType::control || t == TokenType::unknown;
}

std::string TokenizerImpl::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  std::string bytes;
  bool first_text = true;
  for (int32_t id : ids) {
    check_id(id);
    const bool special = is_special(id);
    if (special && skip_special_tokens) continue;
    std::string_view piece = decoded_[id];
    if (first_text && !special && spec_.strip_leading_space && piece.starts_with(' ')) {
      piece.remove_prefix(1);
    }
    if (!special) first_text = false;
    bytes.append(piece);
  }
  return to_valid_utf8(bytes);
}

}  // namespace aph::text
