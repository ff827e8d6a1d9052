// Shared by the chat template unit tests: compile + render in one call.
#pragma once

#include <boost/json.hpp>
#include <string>

#include "core/chat/chat_template.hpp"

namespace aph::chat::testing {

inline std::string render(const std::string& source, const std::string& json_context = "{}") {
  auto tmpl = ChatTemplate::compile(source);
  return tmpl->render(boost::json::parse(json_context).as_object());
}

}  // namespace aph::chat::testing
