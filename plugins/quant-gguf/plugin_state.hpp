// Per-load plugin state: the host's services and the [plugins.gguf] options.
#pragma once

#include <memory>
#include <string>

#include "aphrodite/plugin.h"

namespace aph::gguf {

class CudaContext;

struct PluginState {
  const aph_host_services* services = nullptr;
  // cpu_exact: the fp32 CPU path (dequantized rows, no int8 activations);
  // slower, but matches a dequantize-then-matmul reference to fp32 rounding.
  bool cpu_exact = false;
  std::unique_ptr<CudaContext> cuda;  // created on the first CUDA linear

  PluginState();
  ~PluginState();
  void log(aph_log_level level, const std::string& message) const;
};

}  // namespace aph::gguf
