// The daemon's configuration: aphrodite.toml, then command-line flags on top.
// Every key and flag is documented in docs/CONFIG.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/engine/engine.hpp"

namespace aph::server {

struct HttpConfig {
  std::string host = "127.0.0.1";
  int port = 2242;  // 0 = any free port (the log says which)
  std::vector<std::string> api_keys;  // empty = no authentication
  uint64_t max_body_bytes = 8ull << 20;
  uint64_t max_header_bytes = 16ull << 10;
  bool kobold_routes_open = false;  // APH_ROUTE_AUTH_LEGACY routes skip the key check
  int max_connections = 1024;       // beyond it new connections get a 503
  int keep_alive_timeout_s = 60;    // idle keep-alive connections close after this
  std::string cors_allow_origin = "*";  // "" = no CORS headers
};

struct PluginsConfig {
  std::vector<std::string> dirs;     // absolute after loading; empty = the defaults
  std::vector<std::string> enable;   // empty = every plugin found
  std::vector<std::string> disable;
  uint64_t device_memory_budget = 0;  // bytes plugins may take per device; 0 = unlimited
  uint64_t pinned_memory_budget = 0;
  std::map<std::string, std::string> sections_json;  // [plugins.<name>] as JSON text
};

struct DaemonConfig {
  std::string config_path;  // "" when no --config was given
  // The daemon queues decode steps ahead (engine.overlap_decode); the engine
  // library keeps the plain path as its default, which the engine tests
  // compare against. H200, batch 1: +1.6 % (135M random Q4_0), +1.9 % (the
  // real SmolLM2 Q4_1), +0.5 % (8B Q4_K_M); the same tokens and logprobs as
  // the plain path (test_batch_invariance_cuda).
  engine::EngineConfig engine = [] {
    engine::EngineConfig e;
    e.overlap_decode = true;
    return e;
  }();
  HttpConfig http;
  PluginsConfig plugins;
  std::string log_level = "info";

  // Flags that end the program early.
  bool show_help = false;
  bool show_version = false;
  bool list_plugins = false;
};

// Parses toml text into `config` (keys absent from the text keep their
// values). `source_name` prefixes every message ("aphrodite.toml: unknown key
// engine.max_num_seq"). Throws aph::Error (APH_ERR_INVALID_ARGUMENT).
void apply_toml(std::string_view toml_text, const std::string& source_name, DaemonConfig& config);

// Reads the file and applies it; relative paths inside resolve against the
// current directory.
void apply_toml_file(const std::string& path, DaemonConfig& config);

// Applies command-line flags. With `keep_unknown` null an unknown flag throws;
// otherwise unknown arguments are appended to it in order (subcommands).
// --config is read first, wherever it stands, so flags always win over the toml.
DaemonConfig parse_command_line(const std::vector<std::string>& args,
                                std::vector<std::string>* keep_unknown = nullptr);

// Checks cross-field constraints and fills the defaults that depend on the
// environment (plugin directories, absolute paths). Throws aph::Error.
void finalize_config(DaemonConfig& config);

// `aphrodited --help`.
std::string usage_text();

// The plugin directories used when neither the toml nor a flag names any:
// build/plugins under the current directory and ../plugins beside the executable.
std::vector<std::string> default_plugin_dirs();

}  // namespace aph::server
