// Compiled with -mavx2 -mfma -mf16c -mavxvnni (see CMakeLists.txt) and only
// entered after a run-time CPU check: the kernels of dot_x86.hpp with the
// integer dot in one vpdpbusd instead of maddubs + madd + add. The same
// bits as the AVX2 set (both sums are exact), fewer instructions.
#include "plugins/quant-gguf/cpu/dot.hpp"

#include "core/common/cpu_features.hpp"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && defined(__AVXVNNI__)
#include "plugins/quant-gguf/cpu/dot_x86.hpp"

namespace aph::gguf {
namespace {

struct VnniDot {
  static __m256i dot(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_avx_epi32(acc, u, s); }
};

}  // namespace

const DotKernels* avx_vnni_kernels() {
  static const bool ok = aph::cpu_has_avx2_fma_f16c() && aph::cpu_has_avx_vnni();
  static const DotKernels k{rows8<VnniDot>, direct_for<VnniDot>, dot_f32, quantize_act, "avx-vnni"};
  return ok ? &k : nullptr;
}

}  // namespace aph::gguf

#else  // a compiler or target without AVX-VNNI: the AVX2 or portable kernels

namespace aph::gguf {
const DotKernels* avx_vnni_kernels() { return nullptr; }
}  // namespace aph::gguf

#endif
