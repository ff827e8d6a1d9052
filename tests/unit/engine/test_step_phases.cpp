// StepPhases (APH_STEP_PHASES): only finished steps that were kept count, a
// Scope finishes a step on every way out, and an idle wait is no phase.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/engine/step_phases.hpp"

namespace aph::engine {
namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// The mean microseconds per step the summary prints for `phase`.
double mean_us(const std::string& summary, const std::string& phase) {
  const size_t at = summary.find(" " + phase + " ");
  EXPECT_NE(at, std::string::npos) << summary;
  return at == std::string::npos ? -1 : std::stod(summary.substr(at + phase.size() + 2));
}

TEST(StepPhases, OffUnlessAskedFor) {
  unsetenv("APH_STEP_PHASES");
  StepPhases p;
  EXPECT_FALSE(p.enabled());
  p.mark(StepPhases::kLoop);
  p.finish(true);
  EXPECT_NE(p.summary().find("over 0 decode steps"), std::string::npos) << p.summary();
}

TEST(StepPhases, CountsKeptStepsOnlyAndSkipsIdleTime) {
  setenv("APH_STEP_PHASES", "1", 1);
  StepPhases p;
  unsetenv("APH_STEP_PHASES");
  ASSERT_TRUE(p.enabled());
  for (int step = 0; step < 2; ++step) {
    p.mark(StepPhases::kLoop);
    StepPhases::Scope scope(p);
    scope.keep = true;
    sleep_ms(20);
    p.mark(StepPhases::kForward);
  }
  {  // a prefill-like step: not kept, and it returns before any later mark
    p.mark(StepPhases::kLoop);
    StepPhases::Scope scope(p);
    sleep_ms(200);
    p.mark(StepPhases::kForward);
  }
  sleep_ms(200);
  p.restart();  // the engine waited for work
  const std::string s = p.summary();
  EXPECT_NE(s.find("over 2 decode steps"), std::string::npos) << s;
  const double forward = mean_us(s, "forward");
  EXPECT_GE(forward, 19000.0) << s;
  // Had the dropped step's 200 ms counted, the mean would be about 120 ms.
  EXPECT_LT(forward, 90000.0) << "the dropped step's 200 ms counted: " << s;
  // The next kept step's loop phase starts at restart(), not before the idle wait.
  p.mark(StepPhases::kLoop);
  {
    StepPhases::Scope scope(p);
    scope.keep = true;
    p.mark(StepPhases::kForward);
  }
  // With the 200 ms idle wait in it, the mean over the 3 steps would be about 67 ms.
  EXPECT_LT(mean_us(p.summary(), "loop"), 30000.0) << p.summary();
}

}  // namespace
}  // namespace aph::engine
