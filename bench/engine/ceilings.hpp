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

// Milliseconds that `iters` runs of body() take on the CUDA stream (events
// around them), after one warm-up run. Only in builds with CUDA.
double time_stream_ms(void* stream, int iters, const std::function<void()>& body);

}  // namespace aph::bench
