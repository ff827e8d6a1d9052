// Engine::create: picks the device, loads the model, then builds the engine
// around the runner. Kept apart from the engine proper so tests and
// benchmarks with a runner of their own do not pull in the model loader.
#include "core/common/error.hpp"
#include "core/common/log.hpp"
#include "core/engine/engine.hpp"
#include "core/model/model_runner.hpp"

#ifdef APH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace aph::engine {
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

int32_t pick_device(const std::string& device) {
  if (device == "cpu") return APH_DEVICE_CPU;
  if (device == "auto") return cuda_device_count() > 0 ? 0 : APH_DEVICE_CPU;
  int32_t ordinal = -1;
  if (device == "cuda") {
    ordinal = 0;
  } else if (device.rfind("cuda:", 0) == 0) {
    try {
      ordinal = std::stoi(device.substr(5));
    } catch (const std::exception&) {
      ordinal = -1;
    }
  }
  if (ordinal < 0)
    throw invalid_argument("device: \"" + device + "\" is not cpu, cuda, cuda:N or auto");
  if (ordinal >= cuda_device_count())
    throw invalid_argument("device: \"" + device + "\" requested but " +
                           std::to_string(cuda_device_count()) + " CUDA devices are available");
  return ordinal;
}

}  // namespace

std::unique_ptr<Engine> Engine::create(const EngineConfig& config, const PluginRegistry& plugins) {
  model::LoadOptions options;
  options.path = config.model_path;
  options.quantization = config.quantization;
  options.dtype = config.dtype;
  options.device = pick_device(config.device);
  options.max_model_len = config.max_model_len;
  options.cpu_threads = config.cpu_threads;
  logger("engine")->info("loading {} on {}", config.model_path,
                         options.device == APH_DEVICE_CPU
                             ? std::string("cpu")
                             : "cuda:" + std::to_string(options.device));
  auto runner = model::ModelRunner::load(options, plugins);
  return create_with_runner(config, std::move(runner), plugins);
}

}  // namespace aph::engine
