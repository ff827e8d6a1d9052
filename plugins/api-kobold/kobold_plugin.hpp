// The KoboldAI dialect plugin (koboldcpp's API as Kobold Lite and SillyTavern
// use it): state and route handlers.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>

#include "aphrodite/api.h"
#include "aphrodite_api/engine_client.hpp"
#include "aphrodite_api/responder.hpp"
#include "job_registry.hpp"

namespace aph::kobold {

// Figures /api/extra/perf reports.
struct Perf {
  std::mutex mutex;
  double last_process_seconds = 0;
  double last_eval_seconds = 0;
  uint64_t last_token_count = 0;
  uint64_t last_input_count = 0;
  uint64_t total_gens = 0;
  std::string last_stop_reason = "";
};

struct Plugin {
  const aph_host_services* services = nullptr;
  api::EngineClient engine;
  JobRegistry jobs;
  Perf perf;
  std::atomic<int> active{0};
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  explicit Plugin(const aph_host_services* s) : services(s), engine(s->engine, 503) {}
  void log(int level, const std::string& message) const {
    services->log(services->host, level, message.c_str());
  }
};

// Jobs are scoped to the caller (its API key, else its address), so two users
// with the same genkey cannot read or abort each other's generations.
std::string caller_scope(const aph_http_request* request);

void handle_model(Plugin&, const aph_http_request*, const api::Responder&);
void handle_info_version(Plugin&, const aph_http_request*, const api::Responder&);
void handle_extra_version(Plugin&, const aph_http_request*, const api::Responder&);
void handle_max_length(Plugin&, const aph_http_request*, const api::Responder&);
void handle_max_context_length(Plugin&, const aph_http_request*, const api::Responder&);
void handle_preloadstory(Plugin&, const aph_http_request*, const api::Responder&);
void handle_perf(Plugin&, const aph_http_request*, const api::Responder&);
void handle_generate(Plugin&, const aph_http_request*, const api::Responder&);
void handle_generate_stream(Plugin&, const aph_http_request*, const api::Responder&);
void handle_check(Plugin&, const aph_http_request*, const api::Responder&);
void handle_abort(Plugin&, const aph_http_request*, const api::Responder&);
void handle_last_logprobs(Plugin&, const aph_http_request*, const api::Responder&);
void handle_tokencount(Plugin&, const aph_http_request*, const api::Responder&);
void handle_detokenize(Plugin&, const aph_http_request*, const api::Responder&);

}  // namespace aph::kobold
