// koboldcpp's error shape: {"detail":{"msg","type"}}.
#pragma once

#include <string>

#include "aphrodite_api/responder.hpp"

namespace aph::kobold {

void send_error(const api::Responder& out, int status, const std::string& message);

}  // namespace aph::kobold
