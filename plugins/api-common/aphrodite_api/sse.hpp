// Server-sent events framing.
#pragma once

#include <boost/json.hpp>
#include <string>

namespace aph::api {

// "data: <json>\n\n" — what the OpenAI SDKs and SillyTavern parse.
inline std::string sse_data(const boost::json::value& payload) {
  return "data: " + boost::json::serialize(payload) + "\n\n";
}

// "event: <name>\ndata: <json>\n\n" — Kobold Lite's regex wants exactly this,
// with single-line JSON (serialize never emits raw newlines).
inline std::string sse_event(const char* name, const boost::json::value& payload) {
  return std::string("event: ") + name + "\ndata: " + boost::json::serialize(payload) + "\n\n";
}

}  // namespace aph::api
