#include "core/engine/request_params.hpp"

#include <cmath>
#include <limits>

#include "core/common/error.hpp"

namespace aph::engine {
namespace {

namespace json = boost::json;

const json::value* find(const json::object& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || it->value().is_null()) return nullptr;
  return &it->value();
}

bool get_bool(const json::object& o, const char* key, bool fallback) {
  const json::value* v = find(o, key);
  if (!v) return fallback;
  if (!v->is_bool()) throw invalid_argument(std::string(key) + ": expected a boolean");
  return v->as_bool();
}

int64_t as_int(const json::value& v, const std::string& field) {
  if (v.is_int64()) return v.as_int64();
  if (v.is_uint64() && v.as_uint64() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return static_cast<int64_t>(v.as_uint64());
  // Some clients send 200.0 for an integer.
  if (v.is_double() && std::isfinite(v.as_double()) && v.as_double() == std::floor(v.as_double()) &&
      std::abs(v.as_double()) < 9e15)
    return static_cast<int64_t>(v.as_double());
  throw invalid_argument(field + ": expected an integer");
}

std::optional<int64_t> get_int(const json::object& o, const char* key, int64_t lo, int64_t hi) {
  const json::value* v = find(o, key);
  if (!v) return std::nullopt;
  const int64_t x = as_int(*v, key);
  if (x < lo || x > hi)
    throw invalid_argument(std::string(key) + ": " + std::to_string(x) + " is outside [" +
                           std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}

std::string get_string(const json::object& o, const char* key) {
  const json::value* v = find(o, key);
  if (!v) return "";
  if (!v->is_string()) throw invalid_argument(std::string(key) + ": expected a string");
  return std::string(v->as_string());
}

std::vector<int32_t> get_token_ids(const json::value& v, const std::string& field, int32_t vocab) {
  if (!v.is_array()) throw invalid_argument(field + ": expected an array of token ids");
  std::vector<int32_t> ids;
  ids.reserve(v.as_array().size());
  for (size_t i = 0; i < v.as_array().size(); ++i) {
    const std::string name = field + "[" + std::to_string(i) + "]";
    const int64_t id = as_int(v.as_array()[i], name);
    if (id < 0 || id >= vocab)
      throw invalid_argument(name + ": token id " + std::to_string(id) +
                             " is outside the vocabulary (" + std::to_string(vocab) + ")");
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

std::vector<std::string> get_stop(const json::object& o) {
  const json::value* v = find(o, "stop");
  if (!v) return {};
  if (v->is_string()) return {std::string(v->as_string())};
  if (!v->is_array()) throw invalid_argument("stop: expected a string or an array of strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < v->as_array().size(); ++i) {
    const auto& s = v->as_array()[i];
    if (!s.is_string())
      throw invalid_argument("stop[" + std::to_string(i) + "]: expected a string");
    if (!s.as_string().empty()) out.emplace_back(s.as_string());
  }
  return out;
}

}  // namespace

GenerationParams parse_request(const json::object& request, const text::Tokenizer& tokenizer,
                               const sampling::SamplerChain& chain, const RequestLimits& limits) {
  GenerationParams p;
  const bool add_special = get_bool(request, "add_special_tokens", true);
  const json::value* ids = find(request, "prompt_token_ids");
  const json::value* prompt = find(request, "prompt");
  if (ids != nullptr) {
    p.prompt_ids = get_token_ids(*ids, "prompt_token_ids", limits.vocab_size);
  } else if (prompt != nullptr) {
    if (!prompt->is_string()) throw invalid_argument("prompt: expected a string");
    p.prompt_ids =
        tokenizer.encode(prompt->as_string(), {.add_special = add_special, .parse_special = true});
  } else {
    throw invalid_argument("prompt: missing (send \"prompt\" or \"prompt_token_ids\")");
  }
  if (p.prompt_ids.empty()) throw invalid_argument("prompt: empty after tokenization");
  const int64_t prompt_len = static_cast<int64_t>(p.prompt_ids.size());
  if (prompt_len >= limits.max_model_len)
    throw invalid_argument("prompt: " + std::to_string(prompt_len) +
                           " tokens leave no room in the context (max_model_len " +
                           std::to_string(limits.max_model_len) + ")");
  const int64_t room = limits.max_model_len - prompt_len;

  p.n = static_cast<int>(get_int(request, "n", 1, limits.max_n).value_or(1));
  // A larger max_tokens than the context allows ends with "length" at the
  // context's end instead of failing (front ends often send their own maximum).
  p.max_tokens =
      static_cast<int>(std::min(get_int(request, "max_tokens", 1, 1ll << 40).value_or(room), room));
  p.min_tokens = static_cast<int>(get_int(request, "min_tokens", 0, 1ll << 40).value_or(0));
  p.stop = get_stop(request);
  if (const json::value* v = find(request, "stop_token_ids"))
    p.stop_token_ids = get_token_ids(*v, "stop_token_ids", limits.vocab_size);
  p.include_stop_str_in_output = get_bool(request, "include_stop_str_in_output", false);
  p.skip_special_tokens = get_bool(request, "skip_special_tokens", true);
  p.spaces_between_special_tokens = get_bool(request, "spaces_between_special_tokens", true);
  p.lora = get_string(request, "lora");
  p.cache_salt = get_string(request, "cache_salt");

  p.sampling = chain.prepare(request);
  p.ignore_eos = p.sampling->ignore_eos();
  p.logprobs = p.sampling->logprobs();
  return p;
}

}  // namespace aph::engine
