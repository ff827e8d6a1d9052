#include "core/engine/step_phases.hpp"

#include <cstdio>

#include "core/common/env_flag.hpp"

namespace aph::engine {

StepPhases::StepPhases() {
  enabled_ = env_flag("APH_STEP_PHASES", false);
}

void StepPhases::restart() {
  if (enabled_) last_ = Clock::now();
}

void StepPhases::mark(Phase p) {
  if (!enabled_) return;
  const auto now = Clock::now();
  current_[p] += std::chrono::duration<double>(now - last_).count();
  last_ = now;
}

void StepPhases::finish(bool keep) {
  if (!enabled_) return;
  if (keep) {
    for (int p = 0; p < kCount; ++p) seconds_[p] += current_[p];
    ++steps_;
  }
  current_ = {};
}

std::string StepPhases::summary() const {
  static const char* const kNames[kCount] = {"schedule", "forward", "sample", "output", "loop"};
  double total = 0;
  for (double s : seconds_) total += s;
  std::string out = "step phases over " + std::to_string(steps_) + " decode steps (us/step, share):";
  if (steps_ == 0 || total <= 0) return out + " none";
  for (int p = 0; p < kCount; ++p) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " %s %.1f (%.1f%%)", kNames[p], 1e6 * seconds_[p] / steps_,
                  100.0 * seconds_[p] / total);
    out += buf;
  }
  return out;
}

}  // namespace aph::engine
