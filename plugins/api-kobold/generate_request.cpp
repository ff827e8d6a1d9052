#include "generate_request.hpp"

#include <algorithm>

#include "aphrodite_api/fields.hpp"

namespace aph::kobold {
namespace {

// Kobold field -> Aphrodite field, where only the name differs.
const std::pair<const char*, const char*> kRenames[] = {
    {"rep_pen", "repetition_penalty"},
    {"typical", "typical_p"},
    {"mirostat", "mirostat_mode"},
    {"sampler_seed", "seed"},
};

// Keys this dialect consumes itself (everything else passes through to the
// sampler stages, which accept Kobold's dry_*, xtc_*, rep_pen_range, ...).
const char* const kOwned[] = {"prompt", "memory", "max_context_length", "max_length", "genkey",
                              "stop_sequence", "trim_stop", "banned_tokens",
                              "use_default_badwordsids", "bypass_eos", "dynatemp_range",
                              "sampler_order", "logprobs", "render_special", "grammar",
                              "grammar_retain_state", "n", "images", "audio", "quiet",
                              "rep_pen", "typical", "mirostat", "sampler_seed", "temperature",
                              "stop", "max_tokens", "prompt_token_ids", "lora",
                              "custom_token_bans", "banned_strings"};

bool owned(const std::string& key) {
  for (const char* k : kOwned) {
    if (key == k) return true;
  }
  return false;
}

}  // namespace

GenerateRequest build_generate_request(const api::EngineClient& engine,
                                       const boost::json::object& body) {
  api::ModelInfo info = engine.model();
  GenerateRequest out;
  boost::json::object& req = out.engine_request;
  for (const auto& kv : body) {
    if (!owned(std::string(kv.key()))) req[kv.key()] = kv.value();
  }
  for (const auto& [from, to] : kRenames) {
    if (const auto* v = api::present(body, from)) req[to] = *v;
  }

  std::string prompt = api::get_string(body, "prompt").value_or("");
  std::string memory = api::get_string(body, "memory").value_or("");
  out.genkey = api::get_string(body, "genkey").value_or("");
  out.n = api::get_int(body, "n", 1, 16).value_or(1);

  // koboldcpp clamps instead of failing: Lite sends 12288 to 8k models.
  int64_t context = api::get_int(body, "max_context_length", 1, INT32_MAX).value_or(info.max_model_len);
  context = std::min<int64_t>(context, info.max_model_len);
  int64_t max_length = api::get_int(body, "max_length", 1, INT32_MAX).value_or(180);
  max_length = std::max<int64_t>(1, std::min<int64_t>(max_length, context - 1));

  std::vector<int32_t> memory_ids = engine.tokenize(memory, false, false);
  std::vector<int32_t> prompt_ids = engine.tokenize(prompt, false, false);
  std::vector<int32_t> ids;
  if (info.add_bos && info.bos_token_id >= 0) ids.push_back(info.bos_token_id);
  int64_t budget = context - max_length - static_cast<int64_t>(ids.size());
  if (static_cast<int64_t>(memory_ids.size()) > budget) {
    memory_ids.erase(memory_ids.begin(), memory_ids.end() - std::max<int64_t>(budget, 0));
  }
  budget -= static_cast<int64_t>(memory_ids.size());
  if (static_cast<int64_t>(prompt_ids.size()) > budget) {
    prompt_ids.erase(prompt_ids.begin(), prompt_ids.end() - std::max<int64_t>(budget, 0));
  }
  ids.insert(ids.end(), memory_ids.begin(), memory_ids.end());
  ids.insert(ids.end(), prompt_ids.begin(), prompt_ids.end());
  if (ids.empty() && info.bos_token_id >= 0) ids.push_back(info.bos_token_id);
  if (ids.empty()) throw api::bad_request("'prompt' is empty and the model has no BOS token", "prompt");
  out.prompt_tokens = ids.size();
  req["prompt_token_ids"] = api::to_json_array(ids);
  req["add_special_tokens"] = false;
  req["max_tokens"] = max_length;
  req["n"] = out.n;

  double temperature = api::get_number(body, "temperature", 0.0, 1e6).value_or(0.7);
  req["temperature"] = temperature;  // 0 selects greedy in the sampler chain
  if (auto range = api::get_number(body, "dynatemp_range", 0.0, 1e6); range && *range > 0) {
    req["dynatemp_min"] = std::max(0.0, temperature - *range);
    req["dynatemp_max"] = temperature + *range;
  }
  if (!api::present(body, "top_k")) req["top_k"] = 100;
  if (!api::present(body, "top_p")) req["top_p"] = 0.92;
  if (!api::present(body, "rep_pen_range")) req["rep_pen_range"] = 320;
  if (auto seed = api::get_int(body, "sampler_seed", INT64_MIN, INT64_MAX); seed && *seed < 0) {
    req.erase("seed");
  }

  if (const auto* order = api::present(body, "sampler_order")) {
    if (!order->is_array()) throw api::bad_request("'sampler_order' must be a list of ids", "sampler_order");
    for (const auto& id : order->as_array()) {
      if (!id.is_int64()) throw api::bad_request("'sampler_order' must hold integers", "sampler_order");
    }
    req["kobold_sampler_order"] = *order;
  }

  req["stop"] = api::to_json_array(api::get_string_list(body, "stop_sequence"));
  req["include_stop_str_in_output"] = !api::get_bool(body, "trim_stop").value_or(true);
  req["skip_special_tokens"] = !api::get_bool(body, "render_special").value_or(false);
  if (api::get_bool(body, "bypass_eos").value_or(false)) req["ignore_eos"] = true;

  boost::json::array token_bans;
  boost::json::array string_bans;
  if (const auto* bans = api::present(body, "banned_tokens")) {
    if (!bans->is_array()) throw api::bad_request("'banned_tokens' must be a list", "banned_tokens");
    for (const auto& b : bans->as_array()) {
      if (b.is_int64()) {
        token_bans.push_back(b);
      } else if (b.is_string()) {
        if (!b.as_string().empty()) string_bans.push_back(b);
      } else {
        throw api::bad_request("'banned_tokens' must hold strings or token ids", "banned_tokens");
      }
    }
  }
  if (api::get_bool(body, "use_default_badwordsids").value_or(false) && info.eos_token_id >= 0) {
    token_bans.emplace_back(info.eos_token_id);
  }
  if (!token_bans.empty()) req["custom_token_bans"] = std::move(token_bans);
  if (!string_bans.empty()) req["banned_strings"] = std::move(string_bans);

  if (auto grammar = api::get_string(body, "grammar"); grammar && !grammar->empty()) {
    throw api::bad_request("'grammar' (constrained decoding) is not supported", "grammar");
  }
  out.want_logprobs = api::get_bool(body, "logprobs").value_or(false);
  req["logprobs"] = out.want_logprobs ? boost::json::value(5) : boost::json::value(nullptr);
  return out;
}

}  // namespace aph::kobold
