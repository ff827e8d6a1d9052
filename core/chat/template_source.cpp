#include "core/chat/template_source.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/common/error.hpp"

namespace aph::chat {
namespace {

std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw invalid_argument("cannot read chat template file " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string resolve_chat_template_argument(const std::string& value) {
  // A template containing a newline or a tag is never meant as a path.
  if (value.size() < 4096 && value.find('\n') == std::string::npos && value.find("{%") == std::string::npos &&
      value.find("{{") == std::string::npos) {
    if (auto text = read_file(value)) return *text;
  }
  return value;
}

std::optional<std::string> chat_template_from_tokenizer_config(const boost::json::object& config, bool has_tools,
                                                               const std::string& name) {
  const boost::json::value* field = config.if_contains("chat_template");
  if (field == nullptr || field->is_null()) return std::nullopt;
  if (field->is_string()) {
    if (!name.empty() && name != "default") {
      throw invalid_argument("tokenizer_config.json has a single chat_template, not one named '" + name + "'");
    }
    return std::string(field->get_string());
  }
  if (!field->is_array()) throw invalid_argument("tokenizer_config.json: chat_template must be a string or a list");
  std::optional<std::string> first, by_default, tool_use, named;
  for (const auto& entry : field->get_array()) {
    const auto* obj = entry.if_object();
    const boost::json::value* n = obj ? obj->if_contains("name") : nullptr;
    const boost::json::value* t = obj ? obj->if_contains("template") : nullptr;
    if (!n || !t || !n->is_string() || !t->is_string()) {
      throw invalid_argument("tokenizer_config.json: each chat_template entry needs string 'name' and 'template'");
    }
    std::string entry_name(n->get_string());
    std::string text(t->get_string());
    if (!first) first = text;
    if (entry_name == "default") by_default = text;
    if (entry_name == "tool_use") tool_use = text;
    if (!name.empty() && entry_name == name) named = text;
  }
  if (!name.empty()) {
    if (!named) throw invalid_argument("tokenizer_config.json has no chat template named '" + name + "'");
    return named;
  }
  if (has_tools && tool_use) return tool_use;
  if (by_default) return by_default;
  return first;
}

std::optional<std::string> chat_template_from_gguf_metadata(const boost::json::object& metadata, bool has_tools,
                                                            const std::string& name) {
  auto string_at = [&](const std::string& key) -> std::optional<std::string> {
    const boost::json::value* v = metadata.if_contains(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) throw invalid_argument("GGUF metadata " + key + " must be a string");
    return std::string(v->get_string());
  };
  const std::string base = "tokenizer.chat_template";
  if (!name.empty() && name != "default") {
    auto named = string_at(base + "." + name);
    if (!named) throw invalid_argument("GGUF metadata has no chat template named '" + name + "'");
    return named;
  }
  if (has_tools && name.empty()) {
    if (auto tool_use = string_at(base + ".tool_use")) return tool_use;
  }
  return string_at(base);
}

std::optional<std::string> chat_template_from_model_dir(const std::string& dir, bool has_tools, const std::string& name) {
  const std::filesystem::path root(dir);
  if (name.empty()) {
    if (auto text = read_file(root / "chat_template.jinja")) return text;
  }
  auto config_text = read_file(root / "tokenizer_config.json");
  if (!config_text) return std::nullopt;
  boost::system::error_code ec;
  boost::json::value config = boost::json::parse(*config_text, ec);
  if (ec || !config.is_object()) {
    throw invalid_argument((root / "tokenizer_config.json").string() + ": not a JSON object");
  }
  return chat_template_from_tokenizer_config(config.get_object(), has_tools, name);
}

}  // namespace aph::chat
