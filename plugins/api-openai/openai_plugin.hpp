// The OpenAI dialect plugin's state and the route handlers it registers.
#pragma once

#include <string>

#include "aphrodite/api.h"
#include "aphrodite_api/engine_client.hpp"
#include "aphrodite_api/responder.hpp"

namespace aph::openai {

struct Plugin {
  const aph_host_services* services = nullptr;
  api::EngineClient engine;
  explicit Plugin(const aph_host_services* s) : services(s), engine(s->engine, 429) {}
  void log(int level, const std::string& message) const {
    services->log(services->host, level, message.c_str());
  }
};

// Each handler answers through the responder or throws api::HttpError.
void handle_models(Plugin& plugin, const aph_http_request* request, const api::Responder& out);
void handle_model_by_id(Plugin& plugin, const aph_http_request* request, const api::Responder& out);
void handle_tokenize(Plugin& plugin, const aph_http_request* request, const api::Responder& out);
void handle_detokenize(Plugin& plugin, const aph_http_request* request, const api::Responder& out);
void handle_completions(Plugin& plugin, const aph_http_request* request, const api::Responder& out);
void handle_chat(Plugin& plugin, const aph_http_request* request, const api::Responder& out);

}  // namespace aph::openai
