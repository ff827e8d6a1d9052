// One table of every configurable setting, shared by the toml reader and the
// command-line parser so a key and its flag can never disagree on validation.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "server/config.hpp"

namespace aph::server {

enum class SettingType { String, Int, Float, Bool, StringList };

using SettingValue = std::variant<std::string, int64_t, double, bool, std::vector<std::string>>;

// How repeated flags combine with the toml's list.
enum class ListFlagMode {
  Replace,     // the first flag replaces the toml's list, later ones append
  Enable,      // adds to plugins.enable and drops the name from plugins.disable
  Disable,     // the reverse
};

struct Setting {
  std::string toml_key;  // "section.key", or "" for a flag-only setting
  std::vector<std::string> flags;  // "--port"; may be empty (toml only)
  SettingType type;
  std::string help;      // one line for --help and docs/CONFIG.md
  // Validates and stores. Throws aph::Error with a message that does not name
  // the setting: the caller prefixes the key or flag.
  std::function<void(DaemonConfig&, const SettingValue&)> apply;
  ListFlagMode list_mode = ListFlagMode::Replace;
  bool flag_takes_many = false;  // --api-keys a b c
};

const std::vector<Setting>& all_settings();
const Setting* find_setting_by_key(const std::string& toml_key);
const Setting* find_setting_by_flag(const std::string& flag);

// The toml sections whose keys are all listed in all_settings(); [plugins]
// also holds one sub-table per plugin.
const std::vector<std::string>& toml_sections();

}  // namespace aph::server
