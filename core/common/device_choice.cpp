#include "core/common/device_choice.hpp"

#include <exception>

#include "aphrodite/plugin.h"
#include "core/common/error.hpp"

#ifdef APH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace aph {
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
  const int visible = cuda_device_count();
  if (device == "auto") return visible > 0 ? 0 : APH_DEVICE_CPU;
  int32_t ordinal = -1;
  if (device == "cuda") {
    ordinal = 0;
  } else if (device.rfind("cuda:", 0) == 0 && device.size() > 5 &&
             device.find_first_not_of("0123456789", 5) == std::string::npos) {
    try {
      ordinal = std::stoi(device.substr(5));
    } catch (const std::exception&) {  // out of int's range
      ordinal = -1;
    }
  }
  if (ordinal < 0) throw invalid_argument("engine.device: \"" + device + "\" is not cpu, cuda, cuda:N or auto");
#ifndef APH_HAVE_CUDA
  throw invalid_argument("engine.device: \"" + device + "\" requested but this build has no CUDA");
#endif
  if (ordinal >= visible) {
    throw invalid_argument("engine.device: \"" + device + "\" requested but " + std::to_string(visible) +
                           " CUDA devices are visible");
  }
  return ordinal;
}

}  // namespace aph
