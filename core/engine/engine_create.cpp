// Engine::create: picks the device, loads the model, then builds the engine
// around the runner. Kept apart from the engine proper so tests and
// benchmarks with a runner of their own do not pull in the model loader.
#include "core/common/device_choice.hpp"
#include "core/common/log.hpp"
#include "core/engine/engine.hpp"
#include "core/model/model_runner.hpp"

namespace aph::engine {

std::unique_ptr<Engine> Engine::create(const EngineConfig& config, const PluginRegistry& plugins) {
  model::LoadOptions options;
  options.path = config.model_path;
  options.quantization = config.quantization;
  options.dtype = config.dtype;
  options.device = resolve_device(config.device);
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
