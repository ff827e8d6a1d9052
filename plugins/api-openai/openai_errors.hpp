// The OpenAI error shape: {"error":{"message","type","param","code"}}.
#pragma once

#include <boost/json.hpp>
#include <string>

#include "aphrodite_api/responder.hpp"

namespace aph::openai {

boost::json::object error_body(int status, const std::string& message, const std::string& param);
void send_error(const api::Responder& out, int status, const std::string& message,
                const std::string& param = {});

}  // namespace aph::openai
