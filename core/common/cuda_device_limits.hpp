// The current device's limits that launch plans ask for: its SM count and
// the shared memory a CTA may opt into. Queried once a device, at the first
// call, then only read: a decode launch asks up to three times (the split
// plan, launch_decode's choice of kernel, the tensor-core kernel's ring
// form), each a driver call before. Header-only, host code: core kernels and
// plugins both ask.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

namespace aph::cuda_device {

struct Limits {
  int sms = 0;
  int max_smem_optin = 0;  // bytes of shared memory a CTA may opt into
};

// cudaSuccess and *out, or why not. A failed first query (no driver, no
// device) is kept: it does not go away while the process lives.
inline cudaError_t current_limits(Limits* out) {
  struct Table {
    cudaError_t status = cudaSuccess;
    std::vector<Limits> devices;
  };
  static const Table table = [] {
    Table t;
    int n = 0;
    t.status = cudaGetDeviceCount(&n);
    for (int d = 0; t.status == cudaSuccess && d < n; ++d) {
      Limits l;
      t.status = cudaDeviceGetAttribute(&l.sms, cudaDevAttrMultiProcessorCount, d);
      if (t.status == cudaSuccess)
        t.status = cudaDeviceGetAttribute(&l.max_smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, d);
      t.devices.push_back(l);
    }
    return t;
  }();
  if (table.status != cudaSuccess) return table.status;
  int device = 0;
  const cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return e;
  if (device < 0 || static_cast<size_t>(device) >= table.devices.size()) return cudaErrorInvalidDevice;
  *out = table.devices[static_cast<size_t>(device)];
  return cudaSuccess;
}

}  // namespace aph::cuda_device
