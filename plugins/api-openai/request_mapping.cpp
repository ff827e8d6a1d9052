#include "request_mapping.hpp"

#include "aphrodite_api/fields.hpp"

namespace aph::openai {

ModelChoice resolve_model(const api::ModelInfo& info, const boost::json::object& body) {
  ModelChoice choice{info.served_model_name, ""};
  auto requested = api::get_string(body, "model");
  // SillyTavern sends "" for the tokenizer call and some clients omit it.
  if (!requested || requested->empty() || *requested == info.served_model_name) return choice;
  for (const auto& lora : info.lora_names) {
    if (*requested == lora) return ModelChoice{lora, lora};
  }
  throw api::HttpError(404, "The model `" + *requested + "` does not exist.", "model");
}

int64_t requested_n(const boost::json::object& body) {
  return api::get_int(body, "n", 1, 128).value_or(1);
}

boost::json::object canonical_request(const boost::json::object& body, const ModelChoice& model,
                                      std::initializer_list<const char*> dialect_keys) {
  boost::json::object request;
  for (const auto& kv : body) {
    bool owned = false;
    for (const char* key : dialect_keys) owned = owned || kv.key() == key;
    if (!owned) request[kv.key()] = kv.value();
  }
  request["n"] = requested_n(body);
  request["stop"] = api::to_json_array(api::get_string_list(body, "stop"));
  if (!model.lora.empty()) request["lora"] = model.lora;
  if (auto stream = api::get_bool(body, "stream")) (void)stream;  // type-checked only
  return request;
}

}  // namespace aph::openai
