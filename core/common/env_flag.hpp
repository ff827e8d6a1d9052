// On/off switches read from the environment (the APH_* experiment knobs of
// docs/CONFIG.md). Callers keep the result in a function-local static, so
// the variable is read once a process. Header-only: core and plugins, host
// code of .cu files included.
#pragma once

#include <cstdlib>

namespace aph {

// `fallback` when `name` is unset; otherwise whether it parses as a nonzero
// integer ("1" on, "0" or text off).
inline bool env_flag(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  return v == nullptr ? fallback : std::atoi(v) != 0;
}

}  // namespace aph
