// POST /v1/tokenize and POST /v1/detokenize (Aphrodite's shapes; SillyTavern
// calls tokenize often and reads `count`, then `tokens`).
#include "aphrodite_api/fields.hpp"
#include "openai_plugin.hpp"
#include "request_mapping.hpp"

namespace aph::openai {

void handle_tokenize(Plugin& plugin, const aph_http_request* request, const api::Responder& out) {
  boost::json::object body = api::parse_body_object(api::body_of(request));
  api::ModelInfo info = plugin.engine.model();
  resolve_model(info, body);
  bool add_special = api::get_bool(body, "add_special_tokens").value_or(true);
  std::string text;
  if (const auto* messages = api::present(body, "messages")) {
    if (!messages->is_array()) throw api::bad_request("'messages' must be a list", "messages");
    boost::json::object options{
        {"add_generation_prompt", api::get_bool(body, "add_generation_prompt").value_or(true)},
        {"continue_final_message", api::get_bool(body, "continue_final_message").value_or(false)}};
    text = plugin.engine.apply_chat_template(*messages, options);
    add_special = api::get_bool(body, "add_special_tokens").value_or(false);
  } else {
    auto prompt = api::get_string(body, "prompt");
    if (!prompt) throw api::bad_request("'prompt' (a string) or 'messages' is required", "prompt");
    text = *prompt;
  }
  std::vector<int32_t> ids = plugin.engine.tokenize(text, add_special, false);
  out.json(200, boost::json::object{{"count", ids.size()},
                                    {"max_model_len", info.max_model_len},
                                    {"tokens", api::to_json_array(ids)}});
}

void handle_detokenize(Plugin& plugin, const aph_http_request* request,
                       const api::Responder& out) {
  boost::json::object body = api::parse_body_object(api::body_of(request));
  api::ModelInfo info = plugin.engine.model();
  resolve_model(info, body);
  const auto* tokens = api::present(body, "tokens");
  if (tokens == nullptr || !tokens->is_array()) {
    throw api::bad_request("'tokens' must be a list of token ids", "tokens");
  }
  std::vector<int32_t> ids;
  for (const auto& t : tokens->as_array()) {
    if (!t.is_int64() || t.as_int64() < 0 || t.as_int64() >= info.vocab_size) {
      throw api::bad_request("'tokens' must hold ids in [0, " + std::to_string(info.vocab_size) + ")",
                             "tokens");
    }
    ids.push_back(static_cast<int32_t>(t.as_int64()));
  }
  out.json(200, boost::json::object{{"prompt", plugin.engine.detokenize(ids, false)}});
}

}  // namespace aph::openai
