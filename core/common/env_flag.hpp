// Switches and numbers read from the environment (the APH_* knobs of
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

// The integer `name` starts with, or `fallback` when it is unset or starts
// with no number. Callers check the range they accept.
inline long env_int(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return end == v ? fallback : n;
}

// env_int within [1, most], else `fallback` (the knobs that override a
// positive count or length).
inline long env_positive(const char* name, long fallback, long most) {
  const long n = env_int(name, 0);
  return n > 0 && n <= most ? n : fallback;
}

}  // namespace aph
