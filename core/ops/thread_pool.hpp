// The CPU ops use the process-wide pool from core/common.
#pragma once

#include "core/common/thread_pool.hpp"

namespace aph::ops {
using aph::parallel_for;
using aph::ThreadPool;
}  // namespace aph::ops
