#include "plugins/quant-gguf/plugin_state.hpp"

#include "plugins/quant-gguf/cuda/cuda_linear.hpp"

namespace aph::gguf {

PluginState::PluginState() = default;
PluginState::~PluginState() = default;

void PluginState::log(aph_log_level level, const std::string& message) const {
  if (services && services->log) services->log(services->host, level, message.c_str());
}

}  // namespace aph::gguf
