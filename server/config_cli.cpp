// Command-line flags (Aphrodite's names) on top of the toml.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "core/common/error.hpp"
#include "server/config.hpp"
#include "server/settings.hpp"

namespace aph::server {
namespace {

namespace fs = std::filesystem;

bool is_flag(const std::string& arg) { return arg.size() > 1 && arg[0] == '-' && !std::isdigit(static_cast<unsigned char>(arg[1])); }

int64_t parse_int(const std::string& flag, const std::string& text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    throw invalid_argument(flag + ": must be an integer (got \"" + text + "\")");
  }
  return value;
}

double parse_float(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
    throw invalid_argument(flag + ": must be a number (got \"" + text + "\")");
  }
  return value;
}

bool parse_bool(const std::string& flag, const std::string& text) {
  if (text == "true" || text == "1" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "0" || text == "no" || text == "off") return false;
  throw invalid_argument(flag + ": must be true or false (got \"" + text + "\")");
}

void apply_named(const Setting& setting, const std::string& flag, DaemonConfig& config,
                 const SettingValue& value) {
  try {
    setting.apply(config, value);
  } catch (const Error& e) {
    throw invalid_argument(flag + ": " + e.what());
  }
}

void remove_from(std::vector<std::string>& list, const std::string& value) {
  std::erase(list, value);
}

void add_once(std::vector<std::string>& list, const std::string& value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

}  // namespace

DaemonConfig parse_command_line(const std::vector<std::string>& args,
                                std::vector<std::string>* keep_unknown) {
  DaemonConfig config;
  // --config first, so every other flag overrides the file whatever the order.
  for (size_t i = 0; i < args.size(); ++i) {
    std::string path;
    if (args[i] == "--config") {
      if (i + 1 >= args.size()) throw invalid_argument("--config: needs a file path");
      path = args[i + 1];
    } else if (args[i].rfind("--config=", 0) == 0) {
      path = args[i].substr(9);
    } else {
      continue;
    }
    if (path.empty()) throw invalid_argument("--config: needs a file path");
    config.config_path = path;
    apply_toml_file(path, config);
    break;
  }

  std::map<const Setting*, std::vector<std::string>> lists;
  std::map<const Setting*, std::string> list_flag_names;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") { config.show_help = true; continue; }
    if (arg == "--version") { config.show_version = true; continue; }
    if (arg == "--list-plugins") { config.list_plugins = true; continue; }
    if (arg == "--config") { ++i; continue; }
    if (arg.rfind("--config=", 0) == 0) continue;

    std::string name = arg;
    std::string inline_value;
    bool has_inline = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
      has_inline = true;
    }
    const Setting* setting = find_setting_by_flag(name);
    bool negated = false;
    if (setting == nullptr && name.rfind("--no-", 0) == 0) {
      const Setting* positive = find_setting_by_flag("--" + name.substr(5));
      if (positive != nullptr && positive->type == SettingType::Bool) {
        setting = positive;
        negated = true;
      }
    }
    if (setting == nullptr) {
      if (keep_unknown != nullptr) {
        keep_unknown->push_back(arg);
        continue;
      }
      if (is_flag(arg)) throw invalid_argument("unknown flag " + name + " (see --help)");
      throw invalid_argument("unexpected argument \"" + arg + "\" (see --help)");
    }

    if (setting->type == SettingType::Bool) {
      bool value = has_inline ? parse_bool(name, inline_value) : true;
      if (negated && has_inline) throw invalid_argument(name + ": takes no value");
      apply_named(*setting, name, config, SettingValue(negated ? false : value));
      continue;
    }

    std::vector<std::string> values;
    if (has_inline) {
      values.push_back(inline_value);
    } else {
      if (i + 1 >= args.size() || (is_flag(args[i + 1]) && args[i + 1] != "-")) {
        throw invalid_argument(name + ": needs a value");
      }
      values.push_back(args[++i]);
      while (setting->flag_takes_many && i + 1 < args.size() && !is_flag(args[i + 1])) {
        values.push_back(args[++i]);
      }
    }

    switch (setting->type) {
      case SettingType::String: apply_named(*setting, name, config, SettingValue(values[0])); break;
      case SettingType::Int:
        apply_named(*setting, name, config, SettingValue(parse_int(name, values[0])));
        break;
      case SettingType::Float:
        apply_named(*setting, name, config, SettingValue(parse_float(name, values[0])));
        break;
      case SettingType::StringList:
        for (const auto& v : values) {
          if (v.empty()) throw invalid_argument(name + ": must not be empty");
        }
        if (setting->list_mode == ListFlagMode::Enable) {
          for (const auto& v : values) {
            add_once(config.plugins.enable, v);
            remove_from(config.plugins.disable, v);
          }
        } else if (setting->list_mode == ListFlagMode::Disable) {
          for (const auto& v : values) {
            add_once(config.plugins.disable, v);
            remove_from(config.plugins.enable, v);
          }
        } else {
          auto& list = lists[setting];
          list.insert(list.end(), values.begin(), values.end());
          list_flag_names[setting] = name;
        }
        break;
      case SettingType::Bool: break;
    }
  }
  for (const auto& [setting, values] : lists) {
    apply_named(*setting, list_flag_names[setting], config, SettingValue(values));
  }
  return config;
}

std::vector<std::string> default_plugin_dirs() {
  std::vector<std::string> dirs;
  std::error_code ec;
  fs::path cwd_dir = fs::absolute("build/plugins", ec);
  if (!ec) dirs.push_back(cwd_dir.lexically_normal().string());
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    std::string beside = (exe.parent_path() / ".." / "plugins").lexically_normal().string();
    fs::path a = fs::weakly_canonical(beside, ec);
    fs::path b = dirs.empty() ? fs::path() : fs::weakly_canonical(dirs[0], ec);
    if (dirs.empty() || a != b) dirs.push_back(beside);
  }
  return dirs;
}

void finalize_config(DaemonConfig& config) {
  std::error_code ec;
  if (config.plugins.dirs.empty()) {
    config.plugins.dirs = default_plugin_dirs();
  } else {
    for (auto& dir : config.plugins.dirs) {
      fs::path abs = fs::absolute(dir, ec);
      if (!ec) dir = abs.lexically_normal().string();
    }
  }
  if (!config.engine.model_path.empty()) {
    fs::path abs = fs::absolute(config.engine.model_path, ec);
    if (!ec) config.engine.model_path = abs.lexically_normal().string();
  }
  for (const auto& name : config.plugins.enable) {
    if (std::find(config.plugins.disable.begin(), config.plugins.disable.end(), name) !=
        config.plugins.disable.end()) {
      throw invalid_argument("plugins: '" + name + "' is both enabled and disabled");
    }
  }
}

std::string usage_text() {
  std::ostringstream out;
  out << "usage: aphrodited [--config aphrodite.toml] [flags]\n"
         "       aphrodited <subcommand> [args]\n\n"
         "flags (override the toml; see docs/CONFIG.md):\n"
         "  --config PATH               the toml file (relative paths inside resolve against the\n"
         "                              current directory)\n";
  for (const auto& s : all_settings()) {
    if (s.flags.empty()) continue;
    std::string names;
    for (const auto& f : s.flags) names += (names.empty() ? "" : ", ") + f;
    if (s.type != SettingType::Bool) names += s.flag_takes_many ? " KEY..." : " VALUE";
    out << "  " << names;
    for (size_t pad = names.size(); pad < 28; ++pad) out << ' ';
    out << (names.size() >= 28 ? " " : "") << s.help;
    if (!s.toml_key.empty()) out << " [" << s.toml_key << "]";
    out << "\n";
  }
  out << "  --list-plugins              load the plugins, print loaded and skipped ones, exit\n"
         "  --help, --version\n";
  return out.str();
}

}  // namespace aph::server
