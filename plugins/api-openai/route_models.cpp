// GET /v1/models and GET /v1/models/{id}.
#include <chrono>

#include "aphrodite_api/http_error.hpp"
#include "openai_plugin.hpp"

namespace aph::openai {
namespace {

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

boost::json::object model_card(const std::string& id, const api::ModelInfo& info,
                               const std::string& parent) {
  boost::json::object card{{"id", id},
                           {"object", "model"},
                           {"created", now_seconds()},
                           {"owned_by", "aphrodite"},
                           {"root", parent.empty() ? id : parent},
                           {"parent", parent.empty() ? boost::json::value(nullptr) : boost::json::value(parent)},
                           {"max_model_len", info.max_model_len},
                           {"permission", boost::json::array()}};
  return card;
}

}  // namespace

void handle_models(Plugin& plugin, const aph_http_request*, const api::Responder& out) {
  api::ModelInfo info = plugin.engine.model();
  boost::json::array data;
  data.push_back(model_card(info.served_model_name, info, ""));
  for (const auto& lora : info.lora_names) {
    data.push_back(model_card(lora, info, info.served_model_name));
  }
  out.json(200, boost::json::object{{"object", "list"}, {"data", std::move(data)}});
}

void handle_model_by_id(Plugin& plugin, const aph_http_request* request,
                        const api::Responder& out) {
  std::string_view path = request->path;
  std::string_view prefix = "/v1/models/";
  std::string id(path.substr(prefix.size()));
  api::ModelInfo info = plugin.engine.model();
  if (id == info.served_model_name) {
    out.json(200, model_card(id, info, ""));
    return;
  }
  for (const auto& lora : info.lora_names) {
    if (id == lora) {
      out.json(200, model_card(id, info, info.served_model_name));
      return;
    }
  }
  throw api::HttpError(404, "The model `" + id + "` does not exist.", "model");
}

}  // namespace aph::openai
