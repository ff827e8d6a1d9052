// engine.device ("cpu" | "cuda" | "auto") as the ordinal plugins see through
// aph_host_services.active_device.
#pragma once

#include <cstdint>
#include <string>

namespace aph::server {

// APH_DEVICE_CPU or a CUDA ordinal. "cuda" without a usable GPU throws
// aph::Error naming --device.
int32_t resolve_device(const std::string& device);

}  // namespace aph::server
