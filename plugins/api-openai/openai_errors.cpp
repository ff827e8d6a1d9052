#include "openai_errors.hpp"

namespace aph::openai {
namespace {

const char* type_for(int status) {
  switch (status) {
    case 400: return "BadRequestError";
    case 401: return "AuthenticationError";
    case 403: return "PermissionDeniedError";
    case 404: return "NotFoundError";
    case 405: return "MethodNotAllowedError";
    case 413: return "RequestTooLargeError";
    case 429: return "RateLimitError";
    default: return status >= 500 ? "InternalServerError" : "BadRequestError";
  }
}

}  // namespace

boost::json::object error_body(int status, const std::string& message, const std::string& param) {
  boost::json::object error;
  error["message"] = message;
  error["type"] = type_for(status);
  error["param"] = param.empty() ? boost::json::value(nullptr) : boost::json::value(param);
  error["code"] = status;
  return boost::json::object{{"error", std::move(error)}};
}

void send_error(const api::Responder& out, int status, const std::string& message,
                const std::string& param) {
  // SDKs retry 429 and 5xx unless told otherwise; a full queue is worth a
  // retry, a server bug is not worth three.
  out.header("x-should-retry", status == 429 ? "true" : "false");
  out.json(status, error_body(status, message, param));
}

}  // namespace aph::openai
