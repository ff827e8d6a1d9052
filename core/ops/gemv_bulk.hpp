// The bulk form of the batch-1 GEMV (gemv_bulk.cu): y[n] = x · w[n, :] +
// bias[n] for one row of x, on sm_90. gemv (kernels.hpp) takes it with
// split == kGemvBulk, or by itself for m == 1 when APH_GEMV_BULK=1.
#pragma once

#include <cstdint>

namespace aph::ops::kernels {

// Whether APH_GEMV_BULK=1 asks gemv to take the bulk form where it can.
bool gemv_bulk_enabled();

// cudaErrorNotSupported (launching nothing) on a GPU before sm_90, for x or
// w not 16-byte aligned, k not whole 16-byte vectors, or a row of over 48 KB;
// otherwise the launch's status.
int gemv_bulk(const void* x, const void* w, const float* bias, void* y, int64_t n, int64_t k, int dtype,
              int y_dtype, void* stream);

}  // namespace aph::ops::kernels
