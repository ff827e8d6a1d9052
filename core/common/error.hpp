// Errors inside the host and inside plugins' C++ code travel as exceptions of
// one type; every ABI boundary converts them to aph_status + message.
#pragma once

#include <cstring>
#include <stdexcept>
#include <string>

#include "aphrodite/plugin.h"

namespace aph {

class Error : public std::runtime_error {
 public:
  Error(aph_status code, const std::string& message) : std::runtime_error(message), code_(code) {}
  aph_status code() const noexcept { return code_; }

 private:
  aph_status code_;
};

// A caller mistake (bad field, bad file): becomes a 4xx, never a 5xx.
inline Error invalid_argument(const std::string& message) {
  return Error(APH_ERR_INVALID_ARGUMENT, message);
}

inline void write_error(aph_error* err, aph_status code, const char* message) noexcept {
  if (err == nullptr) return;
  err->size = sizeof(aph_error);
  err->code = code;
  std::strncpy(err->message, message ? message : "", APH_ERROR_MESSAGE_CAPACITY - 1);
  err->message[APH_ERROR_MESSAGE_CAPACITY - 1] = '\0';
}

// Runs `body` and turns any exception into a status, for ABI shims.
template <typename Body>
aph_status guard(aph_error* err, Body&& body) noexcept {
  try {
    body();
    return APH_OK;
  } catch (const Error& e) {
    write_error(err, e.code(), e.what());
    return e.code();
  } catch (const std::bad_alloc&) {
    write_error(err, APH_ERR_OUT_OF_MEMORY, "out of host memory");
    return APH_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    write_error(err, APH_ERR_INTERNAL, e.what());
    return APH_ERR_INTERNAL;
  } catch (...) {
    write_error(err, APH_ERR_INTERNAL, "unknown exception");
    return APH_ERR_INTERNAL;
  }
}

// Throws the error a C call reported.
inline void check(aph_status status, const aph_error& err, const std::string& context) {
  if (status != APH_OK) throw Error(status, context + ": " + err.message);
}

}  // namespace aph
