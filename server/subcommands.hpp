// `aphrodited <subcommand> ...`: tools that share the daemon's binary, config
// and plugins (tokenize, generate, ...). A subcommand is one file in
// server/commands/ that registers itself; main.cpp never names it.
//
//   // server/commands/tokenize.cpp
//   #include "server/subcommands.hpp"
//   static int run_tokenize(const std::vector<std::string>& args) {
//     auto setup = aph::server::prepare_subcommand(args);  // --config, --plugin-dir, ...
//     const aph::PluginRegistry& plugins = setup.plugins->registry();
//     ... setup.config.engine (an aph::engine::EngineConfig) ... setup.rest ...
//     return 0;
//   }
//   APH_SUBCOMMAND(tokenize, "tokenize", "print the token ids of a text", run_tokenize);
//
// A subcommand may throw aph::Error for a bad argument: main prints the
// message and exits with status 2.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "server/config.hpp"
#include "server/plugin_loader.hpp"

namespace aph::server {

// args: everything after the subcommand's name. Returns the exit status.
using SubcommandFn = int (*)(const std::vector<std::string>& args);

struct Subcommand {
  std::string name;
  std::string summary;  // one line for `aphrodited --help`
  SubcommandFn run = nullptr;
};

// Called from static initializers (APH_SUBCOMMAND); a duplicate name throws.
bool register_subcommand(const char* name, const char* summary, SubcommandFn run);
// nullptr when no subcommand has that name.
const Subcommand* find_subcommand(const std::string& name);
// Sorted by name.
std::vector<Subcommand> list_subcommands();

#define APH_SUBCOMMAND(ident, name, summary, fn)                                   \
  [[maybe_unused]] static const bool aph_subcommand_registered_##ident =            \
      ::aph::server::register_subcommand(name, summary, fn)

// What a subcommand gets from prepare_subcommand: the daemon's configuration
// (toml + the daemon's flags), the loaded plugins, and the arguments that were
// not the daemon's.
struct SubcommandSetup {
  DaemonConfig config;
  // Owns the plugin libraries: shuts every plugin down and unloads it when
  // destroyed. Destroy whatever you created through a plugin (engine, quant
  // linears, model sources) before this goes.
  std::unique_ptr<PluginLoader> plugins;
  std::vector<std::string> rest;  // arguments the daemon's parser did not know, in order
};

// Parses the daemon's flags out of args (--config, --plugin-dir (repeatable),
// --enable-plugin, --disable-plugin, --log-level, --model, --device, ... every
// flag of `aphrodited --help`), leaving the others in `rest`, then loads the
// plugins from the configured directories. Without --plugin-dir or a toml
// [plugins] dirs, the directories are build/plugins (relative to the current
// directory) and ../plugins relative to the executable (binaries land in
// build/bin). API plugins get an engine facade that answers APH_ERR_BUSY.
// Throws aph::Error naming the flag or toml key at fault. Skipped plugins are
// logged, never fatal.
SubcommandSetup prepare_subcommand(const std::vector<std::string>& args);

// The same, for code that already has a DaemonConfig.
std::unique_ptr<PluginLoader> load_plugins(const DaemonConfig& config);

}  // namespace aph::server
