// engine.device ("cpu", "cuda", "cuda:N" or "auto") as a device ordinal: the
// one rule the daemon, its subcommands, the plugins' active_device and the
// model loader share, so they never pick different devices.
#pragma once

#include <cstdint>
#include <string>

namespace aph {

// APH_DEVICE_CPU or a CUDA ordinal. "auto" is CUDA device 0 when one is
// visible, else the CPU. Anything else, or a CUDA device that is not there
// (or a build without CUDA), throws aph::Error (invalid argument) naming
// engine.device.
int32_t resolve_device(const std::string& device);

}  // namespace aph
