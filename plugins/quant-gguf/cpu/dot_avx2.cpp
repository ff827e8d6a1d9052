// Compiled with -mavx2 -mfma -mf16c (see CMakeLists.txt) and only entered
// after a run-time CPU check. The kernels live in dot_x86.hpp (internal
// linkage, so no AVX2 code can leak into code paths of older CPUs).
#include "plugins/quant-gguf/cpu/dot.hpp"

#include "core/common/cpu_features.hpp"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "plugins/quant-gguf/cpu/dot_x86.hpp"

namespace aph::gguf {
namespace {

// u8 * s8 products: pairs summed by maddubs (they fit int16: codes are at
// most 128 in magnitude, activations 127), then pairs of pairs by madd.
struct MaddDot {
  static __m256i dot(__m256i acc, __m256i u, __m256i s) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
  }
};

}  // namespace

const DotKernels* avx2_kernels() {
  static const bool ok = aph::cpu_has_avx2_fma_f16c();
  static const DotKernels k{rows8<MaddDot>, direct_for<MaddDot>, dot_f32, quantize_act, "avx2"};
  return ok ? &k : nullptr;
}

}  // namespace aph::gguf

#else  // not an x86 build with AVX2 flags: the portable kernels only

namespace aph::gguf {
const DotKernels* avx2_kernels() { return nullptr; }
}  // namespace aph::gguf

#endif
