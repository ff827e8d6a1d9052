// A toml table as JSON text: how a plugin receives its [plugins.<name>]
// section through aph_host_services.config_json.
#pragma once

#include <string>

#include <toml++/toml.h>

namespace aph::server {

// Dates and times become their toml text; NaN/inf throw aph::Error naming
// `where` plus the key path, since JSON has no spelling for them.
std::string toml_table_to_json(const toml::table& table, const std::string& where);

}  // namespace aph::server
