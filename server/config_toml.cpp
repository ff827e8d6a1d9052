// aphrodite.toml -> DaemonConfig. Every key must be known; a wrong type or
// value names the file and the key.
#include <toml++/toml.h>

#include <fstream>
#include <sstream>

#include "core/common/error.hpp"
#include "server/config.hpp"
#include "server/settings.hpp"
#include "server/toml_json.hpp"

namespace aph::server {
namespace {

const char* type_word(SettingType type) {
  switch (type) {
    case SettingType::String: return "a string";
    case SettingType::Int: return "an integer";
    case SettingType::Float: return "a number";
    case SettingType::Bool: return "a boolean";
    case SettingType::StringList: return "an array of strings";
  }
  return "a value";
}

SettingValue read_value(const toml::node& node, SettingType type, const std::string& where) {
  auto wrong = [&]() { return invalid_argument(where + " must be " + type_word(type)); };
  switch (type) {
    case SettingType::String:
      if (!node.is_string()) throw wrong();
      return node.as_string()->get();
    case SettingType::Int:
      if (!node.is_integer()) throw wrong();
      return node.as_integer()->get();
    case SettingType::Float:
      if (node.is_integer()) return double(node.as_integer()->get());
      if (!node.is_floating_point()) throw wrong();
      return node.as_floating_point()->get();
    case SettingType::Bool:
      if (!node.is_boolean()) throw wrong();
      return node.as_boolean()->get();
    case SettingType::StringList: {
      if (!node.is_array()) throw wrong();
      std::vector<std::string> items;
      for (const toml::node& item : *node.as_array()) {
        if (!item.is_string()) throw wrong();
        items.push_back(item.as_string()->get());
      }
      return items;
    }
  }
  throw wrong();
}

}  // namespace

void apply_toml(std::string_view toml_text, const std::string& source_name, DaemonConfig& config) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw invalid_argument(source_name + ":" + std::to_string(where.line) + ":" +
                           std::to_string(where.column) + ": " + std::string(e.description()));
  }
  for (auto&& [section_key, section_node] : root) {
    std::string section(section_key.str());
    bool known = false;
    for (const auto& s : toml_sections()) known = known || s == section;
    if (!known) throw invalid_argument(source_name + ": unknown key " + section);
    if (!section_node.is_table()) {
      throw invalid_argument(source_name + ": " + section + " must be a table ([" + section + "])");
    }
    for (auto&& [key_node, value] : *section_node.as_table()) {
      std::string key = section + "." + std::string(key_node.str());
      if (section == "plugins" && value.is_table()) {
        config.plugins.sections_json[std::string(key_node.str())] =
            toml_table_to_json(*value.as_table(), source_name + ": " + key);
        continue;
      }
      const Setting* setting = find_setting_by_key(key);
      if (setting == nullptr) throw invalid_argument(source_name + ": unknown key " + key);
      SettingValue v = read_value(value, setting->type, source_name + ": " + key);
      try {
        setting->apply(config, v);
      } catch (const Error& e) {
        throw invalid_argument(source_name + ": " + key + " " + e.what());
      }
    }
  }
}

void apply_toml_file(const std::string& path, DaemonConfig& config) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw invalid_argument("--config: cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw invalid_argument("--config: cannot read " + path);
  apply_toml(text.str(), path, config);
}

}  // namespace aph::server
