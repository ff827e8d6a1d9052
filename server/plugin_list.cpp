#include "server/plugin_list.hpp"

#include <sstream>

namespace aph::server {

std::string format_plugin_report(const PluginLoader& loader) {
  std::ostringstream out;
  for (const auto& p : loader.loaded()) {
    out << "loaded  " << kind_name(p.kind) << " " << p.name << " "
        << (p.version.empty() ? "-" : p.version) << " ABI " << p.abi_major << "." << p.abi_minor
        << " " << p.file << "\n";
  }
  for (const auto& s : loader.skipped()) out << "skipped " << s.file << ": " << s.reason << "\n";
  out << loader.loaded().size() << " loaded, " << loader.skipped().size() << " skipped\n";
  return out.str();
}

}  // namespace aph::server
