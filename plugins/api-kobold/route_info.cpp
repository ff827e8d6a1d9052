// The informational routes Lite and SillyTavern call on connect.
#include "kobold_plugin.hpp"

namespace aph::kobold {

// Lite enables DRY at >= 1.70 and XTC at >= 1.74; multiplayer (1.78) and the
// jinja chat mode (1.104) need routes this server does not have.
static constexpr const char* kAdvertisedKoboldCppVersion = "1.76";

void handle_model(Plugin& plugin, const aph_http_request*, const api::Responder& out) {
  api::ModelInfo info = plugin.engine.model();
  out.json(200, boost::json::object{{"result", "aphrodite/" + info.served_model_name}});
}

void handle_info_version(Plugin&, const aph_http_request*, const api::Responder& out) {
  out.json(200, boost::json::object{{"result", "1.2.5"}});
}

void handle_extra_version(Plugin&, const aph_http_request*, const api::Responder& out) {
  out.json(200, boost::json::object{{"result", "KoboldCpp"},
                                    {"version", kAdvertisedKoboldCppVersion},
                                    {"protected", false},
                                    {"txt2img", false},
                                    {"vision", false},
                                    {"audio", false},
                                    {"transcribe", false},
                                    {"multiplayer", false},
                                    {"websearch", false},
                                    {"tts", false},
                                    {"embeddings", false},
                                    {"savedata", false},
                                    {"admin", 0},
                                    {"guidance", false},
                                    {"jinja", false},
                                    {"mcp", false}});
}

void handle_max_length(Plugin& plugin, const aph_http_request*, const api::Responder& out) {
  out.json(200, boost::json::object{{"value", plugin.engine.model().max_model_len}});
}

void handle_max_context_length(Plugin& plugin, const aph_http_request*, const api::Responder& out) {
  out.json(200, boost::json::object{{"value", plugin.engine.model().max_model_len}});
}

void handle_preloadstory(Plugin&, const aph_http_request*, const api::Responder& out) {
  out.json(200, boost::json::object{});
}

void handle_perf(Plugin& plugin, const aph_http_request*, const api::Responder& out) {
  std::lock_guard<std::mutex> lock(plugin.perf.mutex);
  double uptime = std::chrono::duration<double>(std::chrono::steady_clock::now() - plugin.started).count();
  int active = plugin.active.load();
  out.json(200, boost::json::object{{"last_process", plugin.perf.last_process_seconds},
                                    {"last_eval", plugin.perf.last_eval_seconds},
                                    {"last_token_count", plugin.perf.last_token_count},
                                    {"last_input_count", plugin.perf.last_input_count},
                                    {"total_gens", plugin.perf.total_gens},
                                    {"stop_reason", plugin.perf.last_stop_reason},
                                    {"queue", active > 0 ? active - 1 : 0},
                                    {"idle", active == 0 ? 1 : 0},
                                    {"uptime", uptime},
                                    {"quiet", false}});
}

}  // namespace aph::kobold
