// /api/extra/generate/check, /api/extra/abort, /api/extra/last_logprobs.
#include "aphrodite_api/fields.hpp"
#include "kobold_plugin.hpp"

namespace aph::kobold {

std::string caller_scope(const aph_http_request* request) {
  if (request->api_key != nullptr && request->api_key[0] != '\0') {
    return std::string("key:") + request->api_key;
  }
  if (request->size >= offsetof(aph_http_request, remote_addr) + sizeof(const char*) &&
      request->remote_addr != nullptr) {
    return std::string("addr:") + request->remote_addr;
  }
  return "anonymous";
}

void handle_check(Plugin& plugin, const aph_http_request* request, const api::Responder& out) {
  boost::json::object body = api::parse_body_object(api::body_of(request));
  std::string genkey = api::get_string(body, "genkey").value_or("");
  auto job = plugin.jobs.find(caller_scope(request), genkey);
  std::string text;
  if (job) {
    std::lock_guard<std::mutex> lock(job->mutex);
    text = job->text;
  }
  out.json(200, boost::json::object{{"results", boost::json::array{boost::json::object{{"text", text}}}}});
}

void handle_abort(Plugin& plugin, const aph_http_request* request, const api::Responder& out) {
  boost::json::object body = api::parse_body_object(api::body_of(request));
  std::string genkey = api::get_string(body, "genkey").value_or("");
  bool aborted = plugin.jobs.abort(caller_scope(request), genkey);
  out.json(200, boost::json::object{{"success", aborted ? "true" : "false"}, {"done", "true"}});
}

void handle_last_logprobs(Plugin& plugin, const aph_http_request* request,
                          const api::Responder& out) {
  boost::json::object body = api::parse_body_object(api::body_of(request));
  std::string genkey = api::get_string(body, "genkey").value_or("");
  auto job = plugin.jobs.find(caller_scope(request), genkey);
  boost::json::array content;
  if (job) {
    std::lock_guard<std::mutex> lock(job->mutex);
    content = job->logprobs;
  }
  out.json(200, boost::json::object{{"logprobs", boost::json::object{{"content", std::move(content)}}}});
}

}  // namespace aph::kobold
