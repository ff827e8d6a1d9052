// The card's measured ceilings the benchmark divides by: device-to-device copy
// bandwidth (bytes read + written per second) and the bf16 GEMM rate (cuBLAS).
#pragma once

namespace aph::bench {

struct Ceilings {
  double copy_bytes_per_s = 0;  // 0 when there is no CUDA device
  double bf16_flops = 0;
};

// Runs on device 0 for a few seconds. Throws aph::Error on a CUDA failure.
Ceilings measure_ceilings();

}  // namespace aph::bench
