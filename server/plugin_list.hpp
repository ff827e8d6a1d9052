// The `--list-plugins` report: one line per plugin loaded or skipped.
#pragma once

#include <string>

#include "server/plugin_loader.hpp"

namespace aph::server {

// "loaded  <kind> <name> <version> ABI <major>.<minor> <file>" and
// "skipped <file>: <reason>" lines.
std::string format_plugin_report(const PluginLoader& loader);

}  // namespace aph::server
