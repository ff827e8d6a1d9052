// /api/extra/tokencount (koboldcpp: `special` defaults to true, BOS included;
// Lite's ban helper reads `ids`) and /api/extra/detokenize.
#include "aphrodite_api/fields.hpp"
#include "kobold_plugin.hpp"

namespace aph::kobold {

void handle_tokencount(Plugin& plugin, const aph_http_request* request, const api::Responder& out) {
  boost::json::object body = api::parse_body_object(api::body_of(request));
  std::string prompt = api::get_string(body, "prompt").value_or("");
  bool special = api::get_bool(body, "special").value_or(true);
  std::vector<int32_t> ids = plugin.engine.tokenize(prompt, special, false);
  out.json(200, boost::json::object{{"value", ids.size()}, {"ids", api::to_json_array(ids)}});
}

void handle_detokenize(Plugin& plugin, const aph_http_request* request, const api::Responder& out) {
  boost::json::object body = api::parse_body_object(api::body_of(request));
  api::ModelInfo info = plugin.engine.model();
  const auto* ids_value = api::present(body, "ids");
  if (ids_value == nullptr || !ids_value->is_array()) throw api::bad_request("'ids' must be a list", "ids");
  std::vector<int32_t> ids;
  for (const auto& v : ids_value->as_array()) {
    if (!v.is_int64() || v.as_int64() < 0 || v.as_int64() >= info.vocab_size) {
      throw api::bad_request("'ids' must hold token ids in [0, " + std::to_string(info.vocab_size) + ")", "ids");
    }
    ids.push_back(static_cast<int32_t>(v.as_int64()));
  }
  out.json(200, boost::json::object{{"result", plugin.engine.detokenize(ids, false)}, {"success", true}});
}

}  // namespace aph::kobold
