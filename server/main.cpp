// aphrodited: the daemon, or `aphrodited <subcommand> ...`.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "aphrodite/plugin.h"
#include "core/common/error.hpp"
#include "core/common/log.hpp"
#include "server/config.hpp"
#include "server/daemon.hpp"
#include "server/plugin_list.hpp"
#include "server/subcommands.hpp"

namespace {

std::string help_text() {
  std::string text = aph::server::usage_text();
  auto subs = aph::server::list_subcommands();
  if (!subs.empty()) {
    text += "\nsubcommands:\n";
    for (const auto& s : subs) text += "  " + s.name + "  " + s.summary + "\n";
  }
  return text;
}

int run(const std::vector<std::string>& args) {
  using namespace aph::server;
  if (!args.empty() && !args[0].empty() && args[0][0] != '-') {
    const Subcommand* sub = find_subcommand(args[0]);
    if (sub == nullptr) {
      throw aph::invalid_argument("unknown subcommand \"" + args[0] + "\" (see --help)");
    }
    return sub->run(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  DaemonConfig config = parse_command_line(args);
  if (config.show_help) {
    std::fputs(help_text().c_str(), stdout);
    return 0;
  }
  if (config.show_version) {
    std::printf("aphrodited %s (plugin ABI %d.%d)\n", APH_VERSION, APH_ABI_MAJOR, APH_ABI_MINOR);
    return 0;
  }
  finalize_config(config);
  aph::set_log_level(config.log_level);
  if (config.list_plugins) {
    auto loader = load_plugins(config);
    std::fputs(format_plugin_report(*loader).c_str(), stdout);
    return 0;
  }
  return run_daemon(config);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return run(args);
  } catch (const aph::Error& e) {
    std::fprintf(stderr, "aphrodited: %s\n", e.what());
    return e.code() == APH_ERR_INVALID_ARGUMENT ? 2 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "aphrodited: %s\n", e.what());
    return 1;
  }
}
