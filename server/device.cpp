#include "server/device.hpp"

#include "aphrodite/plugin.h"
#include "core/common/error.hpp"

#ifdef APH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace aph::server {
namespace {

int cuda_device_count() {
#ifdef APH_HAVE_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
#else
  return 0;
#endif
}

}  // namespace

int32_t resolve_device(const std::string& device) {
  if (device == "cpu") return APH_DEVICE_CPU;
  int n = cuda_device_count();
  if (device == "cuda") {
    if (n == 0) {
      throw invalid_argument(
#ifdef APH_HAVE_CUDA
          "--device / engine.device: cuda requested but no CUDA device is visible"
#else
          "--device / engine.device: cuda requested but this build has no CUDA"
#endif
      );
    }
    return 0;
  }
  return n > 0 ? 0 : APH_DEVICE_CPU;
}

}  // namespace aph::server
