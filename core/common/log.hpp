// One spdlog logger per component ("server", "engine", "plugin.gguf", ...).
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace aph {

// Returns the component's logger, creating it on first use with the
// process-wide level and sink.
std::shared_ptr<spdlog::logger> logger(const std::string& component);

// Sets the level of every logger, existing and future ("trace" .. "error").
void set_log_level(const std::string& level);

}  // namespace aph
