// The card's measured ceilings the benchmark divides by: device-to-device copy
// bandwidth (bytes read + written per second) and the bf16 GEMM rate (cuBLAS).
#pragma once

#include <functional>

namespace aph::bench {

struct Ceilings {
  double copy_bytes_per_s = 0;  // 0 when there is no CUDA device
  double bf16_flops = 0;
};

// Runs on device 0 for a few seconds. Throws aph::Error on a CUDA failure.
Ceilings measure_ceilings();

// A micro-bench's main: the copy bandwidth in GB/s from `--copy-gbps X`, or
// measured when absent; runs run(copy_gbps) and turns an exception into a
// message on stderr and exit status 1.
int bench_main(int argc, char** argv, const char* name, const std::function<int(double)>& run);

// Milliseconds that `iters` runs of body() take on the CUDA stream (events
// around them), after one warm-up run. Only in builds with CUDA.
double time_stream_ms(void* stream, int iters, const std::function<void()>& body);

// Whether a case runs: APH_BENCH_ONLY unset, or a substring of its label
// (so a profiler can take one shape's launches, e.g. "Q4_K [14336 x 4096]").
bool case_wanted(const char* label);

}  // namespace aph::bench
