// Run-time CPU checks for the CPU kernels built with extra instruction sets
// (one file each, compiled with -mavx2 -mfma -mf16c, entered only after the
// check passes).
#pragma once

namespace aph {

// AVX2, FMA and F16C, and an OS that saves YMM state (CPUID + XGETBV:
// compilers disagree on __builtin_cpu_supports names).
bool cpu_has_avx2_fma_f16c();
// AVX-VNNI (the VEX-encoded vpdpbusd on ymm registers).
bool cpu_has_avx_vnni();

}  // namespace aph
