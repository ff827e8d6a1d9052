// Checks a negotiated plugin's answer before the host trusts any pointer in
// it: struct sizes against ABI 1.0's, required functions present, names sane.
#pragma once

#include <string>

#include "aphrodite/plugin.h"

namespace aph::server {

// The smallest aph_plugin_info a 1.x plugin can write.
constexpr uint32_t kPluginInfoMinSize =
    offsetof(aph_plugin_info, shutdown) + sizeof(aph_plugin_info::shutdown);

// "" when usable, else why not (e.g. "bad vtable size 8 for a quant plugin
// (ABI 1.0 needs at least 112)").
std::string check_plugin_info(const aph_plugin_info& info);

// Plugin names: 1..64 chars of [A-Za-z0-9_.-].
bool valid_plugin_name(const char* name);

}  // namespace aph::server
