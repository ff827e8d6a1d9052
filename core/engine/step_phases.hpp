// Where an engine thread's time goes, phase by phase (APH_STEP_PHASES=1):
// scheduling and batch building, the forward call, sampling (which waits for
// the device), the host work on the sampled tokens, and the loop around the
// step. At batch 1 on a small model a step is a few hundred microseconds, so
// host work the device waits through is a visible share of it; this says
// how much, without a profiler. Only decode steps count (a prefill's forward
// would swamp the means). Off by default: a disabled timer costs one branch
// per phase.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>

namespace aph::engine {

class StepPhases {
 public:
  enum Phase { kSchedule, kForward, kSample, kOutput, kLoop, kCount };

  StepPhases();
  bool enabled() const { return enabled_; }
  // Ends the phase running since the last mark as `p`. A step begins with
  // mark(kLoop): the loop's own work since the previous step's last mark.
  void mark(Phase p);
  // The engine waited idle for work: that time is no phase.
  void restart();
  // The step is over: its phases count when `keep` (a decode step).
  void finish(bool keep);

  // Finishes the step on every way out of it (a step with nothing to sample
  // returns early; its time must not land in the next step's phases).
  class Scope {
   public:
    explicit Scope(StepPhases& phases) : phases_(phases) {}
    ~Scope() { phases_.finish(keep); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    bool keep = false;

   private:
    StepPhases& phases_;
  };
  // One line: steps, and per phase the mean microseconds a step and the share.
  std::string summary() const;

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_ = false;
  Clock::time_point last_ = Clock::now();
  std::array<double, kCount> seconds_{}, current_{};
  uint64_t steps_ = 0;
};

}  // namespace aph::engine
