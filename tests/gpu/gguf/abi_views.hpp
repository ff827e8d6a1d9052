// The ABI descriptors and tensor views the GGUF GPU tests hand the plugin's
// implementation library.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "aphrodite/quant.h"

namespace aph::gguf::test_gpu {

inline aph_weight_info weight_info(uint32_t type, int64_t n, int64_t k, const std::vector<uint8_t>& w) {
  aph_weight_info wi{};
  wi.size = sizeof(wi);
  wi.dtype = -1;
  wi.format_type = type;
  wi.rank = 2;
  wi.shape[0] = n;
  wi.shape[1] = k;
  wi.data = w.data();
  wi.nbytes = w.size();
  return wi;
}

// A one-part CUDA linear descriptor of [n, k] weights wi.
inline aph_linear_desc linear_desc(const char* name, const aph_weight_info* wi, int64_t n, int64_t k, int32_t act,
                                   cudaStream_t stream) {
  aph_linear_desc d{};
  d.size = sizeof(d);
  d.name = name;
  d.in_features = k;
  d.out_features = n;
  d.device = 0;
  d.act_dtype = act;
  d.n_parts = 1;
  d.parts = wi;
  d.stream = stream;
  return d;
}

inline aph_tensor view(void* p, int32_t dtype, int32_t device, std::vector<int64_t> shape) {
  aph_tensor t{};
  t.size = sizeof(t);
  t.dtype = dtype;
  t.device = device;
  t.rank = static_cast<int32_t>(shape.size());
  t.data = p;
  int64_t stride = 1;
  for (int i = t.rank - 1; i >= 0; --i) {
    t.shape[i] = shape[i];
    t.strides[i] = stride;
    stride *= shape[i];
  }
  return t;
}

}  // namespace aph::gguf::test_gpu
