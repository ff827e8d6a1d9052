#include "kobold_errors.hpp"

namespace aph::kobold {

void send_error(const api::Responder& out, int status, const std::string& message) {
  const char* type = status == 401   ? "unauthorized"
                     : status == 404 ? "not_found"
                     : status == 503 ? "service_unavailable"
                     : status < 500  ? "bad_input"
                                     : "server_error";
  out.json(status, boost::json::object{
                       {"detail", boost::json::object{{"msg", message}, {"type", type}}}});
}

}  // namespace aph::kobold
