// An HTTP-level failure a dialect turns into its own error shape.
#pragma once

#include <stdexcept>
#include <string>

#include "aphrodite/plugin.h"

namespace aph::api {

class HttpError : public std::runtime_error {
 public:
  HttpError(int status, std::string message, std::string param = {})
      : std::runtime_error(std::move(message)), status_(status), param_(std::move(param)) {}
  int status() const { return status_; }
  const std::string& param() const { return param_; }

 private:
  int status_;
  std::string param_;
};

inline HttpError bad_request(const std::string& message, const std::string& param = {}) {
  return HttpError(400, message, param);
}

// Maps an engine status to HTTP. busy_status differs by dialect: OpenAI clients
// back off on 429, Kobold Lite shows "server busy" on 503.
inline int http_status_for(aph_status status, int busy_status) {
  switch (status) {
    case APH_OK: return 200;
    case APH_ERR_INVALID_ARGUMENT: return 400;
    case APH_ERR_UNSUPPORTED: return 400;
    case APH_ERR_NOT_FOUND: return 404;
    case APH_ERR_BUSY: return busy_status;
    case APH_ERR_CANCELLED: return 499;
    default: return 500;
  }
}

}  // namespace aph::api
