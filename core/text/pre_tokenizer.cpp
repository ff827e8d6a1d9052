#include "core/text/pre_tokenizer.hpp"

#include <deque>
#include <map>
#include <mutex>
#include <utility>

#include "core/common/error.hpp"
#include "core/text/byte_level.hpp"

namespace aph::text {
namespace {

struct Span {
  size_t begin;
  size_t end;
  bool matched;
};

// Cuts one piece by one step, appending the resulting pieces.
void split_piece(const SplitStep& step, std::string_view piece, std::vector<Span>& spans,
                 std::vector<std::pair<size_t, size_t>>& matches,
                 std::vector<std::string_view>& out) {
  step.regex->find_all(piece, matches);
  spans.clear();
  size_t cursor = 0;
  for (const auto& [b, e] : matches) {
    if (b > cursor) spans.push_back({cursor, b, step.invert});
    spans.push_back({b, e, !step.invert});
    cursor = e;
  }
  if (cursor < piece.size()) spans.push_back({cursor, piece.size(), step.invert});

  auto emit = [&](size_t b, size_t e) {
    if (e > b) out.push_back(piece.substr(b, e - b));
  };
  switch (step.behavior) {
    case SplitBehavior::isolated:
      for (const auto& s : spans) emit(s.begin, s.end);
      break;
    case SplitBehavior::removed:
      for (const auto& s : spans)
        if (!s.matched) emit(s.begin, s.end);
      break;
    case SplitBehavior::contiguous: {
      size_t i = 0;
      while (i < spans.size()) {
        size_t j = i + 1;
        if (spans[i].matched) {
          while (j < spans.size() && spans[j].matched && spans[j].begin == spans[j - 1].end) ++j;
        }
        emit(spans[i].begin, spans[j - 1].end);
        i = j;
      }
      break;
    }
    case SplitBehavior::merged_with_previous: {
      // A match closes the piece that precedes it.
      size_t start = 0;
      for (const auto& s : spans) {
        if (s.matched) {
          emit(start, s.end);
          start = s.end;
        }
      }
      emit(start, piece.size());
      break;
    }
    case SplitBehavior::merged_with_next: {
      // A match opens a new piece.
      size_t start = 0;
      for (const auto& s : spans) {
        if (s.matched && s.begin > start) {
          emit(start, s.begin);
          start = s.begin;
        }
      }
      emit(start, piece.size());
      break;
    }
  }
}

}  // namespace

SplitBehavior parse_split_behavior(const std::string& name) {
  static const std::map<std::string, SplitBehavior> names = {
      {"Isolated", SplitBehavior::isolated},
      {"Removed", SplitBehavior::removed},
      {"MergedWithPrevious", SplitBehavior::merged_with_previous},
      {"MergedWithNext", SplitBehavior::merged_with_next},
      {"Contiguous", SplitBehavior::contiguous}};
  auto it = names.find(name);
  if (it == names.end()) throw invalid_argument("unknown split behavior '" + name + "'");
  return it->second;
}

void PreTokenizer::add_regex(const std::string& pattern, SplitBehavior behavior, bool invert) {
  steps_.push_back(SplitStep{std::make_shared<const Regex>(pattern), behavior, invert});
}

void PreTokenizer::run_steps(size_t first, size_t last, std::vector<std::string_view>& pieces) const {
  thread_local std::vector<std::string_view> next;
  thread_local std::vector<Span> spans;
  thread_local std::vector<std::pair<size_t, size_t>> matches;
  for (size_t i = first; i < last; ++i) {
    next.clear();
    for (std::string_view piece : pieces) split_piece(steps_[i], piece, spans, matches, next);
    pieces.swap(next);
  }
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  pieces.clear();
  if (text.empty()) return;
  pieces.push_back(text);
  if (byte_level_from_ >= steps_.size()) {
    run_steps(0, steps_.size(), pieces);
    return;
  }
  run_steps(0, byte_level_from_, pieces);
  // The later steps cut byte-level text; cuts fall between characters, and
  // each character is one byte, so the pieces map back to raw bytes exactly.
  thread_local std::deque<std::string> storage;
  thread_local std::vector<std::string_view> encoded_pieces;
  storage.clear();
  std::vector<std::string_view> raw_pieces;
  for (std::string_view piece : pieces) {
    const std::string& encoded = storage.emplace_back(byte_level_encode(piece));
    encoded_pieces.assign(1, encoded);
    run_steps(byte_level_from_, steps_.size(), encoded_pieces);
    for (std::string_view e : encoded_pieces) raw_pieces.push_back(storage.emplace_back(byte_level_decode(e)));
  }
  pieces.swap(raw_pieces);
}

namespace {

// llama.cpp's llm_tokenizer_bpe regex_exprs, by pre-tokenizer family.
const char* const kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S))";
const char* const kChatGlm4 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S))";
const char* const kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kTekken =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S))";
const char* const kBloom = R"( ?[^(\s|.,!?…。，、।۔،)]+)";
const char* const kDeepseekLlmLetters =
    R"(\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+)";
const char* const kCjk = R"([一-龥ࠀ-一가-퟿]+)";

std::vector<std::string> patterns_for(const std::string& pre) {
  auto is = [&](std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (pre == n) return true;
    return false;
  };
  if (is({"default"})) {
    return {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2Pattern, R"(\p{N}+)", "[0-9][0-9][0-9]"};
  }
  if (is({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0",
          "lfm2", "dbrx", "smaug-bpe"})) {
    return {kLlama3};
  }
  if (is({"deepseek-llm"})) {
    return {"[\r\n]", kDeepseekLlmLetters, R"(\s?[!-/:-~！-／：-～‘-‟　-。]+)", R"(\s+$)", kCjk,
            R"(\p{N}+)"};
  }
  if (is({"deepseek-coder"})) {
    return {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjk, R"(\p{N})"};
  }
  if (is({"deepseek-v3"})) {
    return {R"(\p{N}{1,3})", R"([一-龥぀-ゟ゠-ヿ]+)",
            R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
  }
  if (is({"falcon"})) {
    return {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2Pattern, "[0-9][0-9][0-9]"};
  }
  if (is({"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"})) {
    return {R"(\p{N})", kGpt2Pattern};
  }
  if (is({"gpt-2", "phi-2", "mpt", "olmo", "jais", "trillion", "jina-es", "jina-de", "gigachat",
          "jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code", "roberta-bpe"})) {
    return {kGpt2Pattern};
  }
  if (is({"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez", "hunyuan"})) return {kQwen2};
  if (is({"chatglm-bpe", "glm4"})) return {kChatGlm4};
  if (is({"poro-chat", "bloom", "gpt3-finnish"})) return {kBloom};
  if (is({"viking"})) return {kBloom, R"(\p{N})"};
  if (is({"tekken"})) return {kTekken};
  if (is({"gpt-4o", "llama4"})) return {kGpt4o};
  if (is({"seed-coder"})) {
    return {R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"};
  }
  throw invalid_argument("tokenizer.ggml.pre: unknown pre-tokenizer '" + pre + "'");
}

}  // namespace

PreTokenizer pre_tokenizer_for_gguf(const std::string& pre_name) {
  // Compiling (and JIT-compiling) is the slow part; models of a family share it.
  static std::mutex mutex;
  static std::map<std::string, PreTokenizer> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find(pre_name);
  if (it != cache.end()) return it->second;
  PreTokenizer pre;
  for (const auto& p : patterns_for(pre_name)) pre.add_regex(p);
  cache.emplace(pre_name, pre);
  return pre;
}

}  // namespace aph::text
