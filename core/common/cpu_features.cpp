#include "core/common/cpu_features.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace aph {

bool cpu_has_avx2_fma_f16c() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28), f16c = c & (1u << 29);
  if (!(fma && osxsave && avx && f16c)) return false;
  unsigned xcr0_lo, xcr0_hi;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 6u) != 6u) return false;  // the OS saves XMM and YMM state
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, 0, a, b, c, d);
  return b & (1u << 5);
#else
  return false;
#endif
}

bool cpu_has_avx_vnni() {
#if defined(__x86_64__) || defined(__i386__)
  if (!cpu_has_avx2_fma_f16c() || __get_cpuid_max(0, nullptr) < 7) return false;
  unsigned a, b, c, d;
  __cpuid_count(7, 1, a, b, c, d);
  return a & (1u << 4);
#else
  return false;
#endif
}

}  // namespace aph
