// An aph_tensor view of a host or device buffer, for GPU tests that call a
// plugin's ABI functions directly.
#pragma once

#include "aphrodite/plugin.h"

namespace aph::test {

// [rows, cols] row-major (cols > 0), or [rows] (cols == 0).
inline aph_tensor tensor_view(void* data, int32_t dtype, int32_t device, int64_t rows, int64_t cols) {
  aph_tensor t{};
  t.size = sizeof(t);
  t.dtype = dtype;
  t.device = device;
  t.rank = cols > 0 ? 2 : 1;
  t.data = data;
  t.shape[0] = rows;
  t.strides[0] = cols > 0 ? cols : 1;
  if (cols > 0) {
    t.shape[1] = cols;
    t.strides[1] = 1;
  }
  return t;
}

}  // namespace aph::test
