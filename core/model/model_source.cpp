#include "core/model/model_source.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/common/error.hpp"
#include "core/common/log.hpp"

namespace aph::model {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

struct Candidate {
  const LoadedQuantPlugin* plugin = nullptr;
  float score = 0;
};

// The plugin --quantization names, or the best probe score above zero.
Candidate pick_plugin(const LoadOptions& options, const PluginRegistry& plugins, const aph_checkpoint_desc& desc) {
  Candidate best;
  std::string names;
  for (const auto& p : plugins.quant) {
    const char* fmt = p.vtable->format_name ? p.vtable->format_name : "";
    names += (names.empty() ? "" : ", ") + std::string(fmt);
    if (!options.quantization.empty()) {
      if (options.quantization == fmt || options.quantization == p.name) best = {&p, 100.0f};
      continue;
    }
    if (!p.vtable->probe) continue;
    float score = 0;
    aph_error err{};
    err.size = sizeof(err);
    if (p.vtable->probe(p.state, &desc, &score, &err) != APH_OK) {
      logger("model")->warn("plugin {} failed to probe {}: {}", p.name, desc.path, err.message);
      continue;
    }
    if (score > best.score) best = {&p, score};
  }
  if (!options.quantization.empty() && !best.plugin) {
    throw invalid_argument("--quantization " + options.quantization + ": no loaded quant plugin has that format (loaded: " +
                           (names.empty() ? std::string("none") : names) + ")");
  }
  return best;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// tokenizer_config.json's chat_template is a string or a list of {name, template}.
std::string hf_chat_template(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / "chat_template.jinja", ec)) return read_text(dir / "chat_template.jinja");
  if (!fs::exists(dir / "tokenizer_config.json", ec)) return "";
  json::value tc = weights::read_json_file((dir / "tokenizer_config.json").string());
  const json::value* t = tc.is_object() ? tc.as_object().if_contains("chat_template") : nullptr;
  if (!t || t->is_null()) return "";
  if (t->is_string()) return std::string(t->as_string());
  if (t->is_array()) {
    for (const auto& e : t->as_array()) {
      if (!e.is_object()) continue;
      const json::value* name = e.as_object().if_contains("name");
      const json::value* tmpl = e.as_object().if_contains("template");
      if (name && name->is_string() && name->as_string() == "default" && tmpl && tmpl->is_string()) {
        return std::string(tmpl->as_string());
      }
    }
  }
  throw invalid_argument((dir / "tokenizer_config.json").string() + ": field 'chat_template' has no default template");
}

}  // namespace

ResolvedModel resolve_model(const LoadOptions& options, const PluginRegistry& plugins) {
  ResolvedModel r;
  std::error_code ec;
  if (!fs::exists(options.path, ec)) throw invalid_argument("model path " + options.path + " does not exist");
  const bool hf = weights::is_hf_directory(options.path);
  std::string config_text;
  if (hf) {
    r.checkpoint = std::make_unique<weights::HfCheckpoint>(options.path);
    config_text = r.checkpoint->config_text();
  }
  aph_checkpoint_desc desc{};
  desc.size = sizeof(desc);
  desc.path = options.path.c_str();
  desc.config_json = hf ? config_text.c_str() : nullptr;
  desc.quantization = options.quantization.c_str();
  Candidate pick = pick_plugin(options, plugins, desc);
  auto log = logger("model");

  if (pick.plugin && pick.plugin->vtable->source_open && !hf) {
    auto src = std::make_unique<PluginSource>(*pick.plugin, desc);
    json::value meta;
    try {
      meta = json::parse(src->metadata_json());
    } catch (const std::exception& e) {
      throw Error(APH_ERR_INTERNAL, src->describe() + ": metadata is not valid JSON: " + e.what());
    }
    if (!meta.is_object()) throw Error(APH_ERR_INTERNAL, src->describe() + ": metadata is not an object");
    const json::object& m = meta.as_object();
    const json::value* cfg = m.if_contains("config");
    if (!cfg || !cfg->is_object()) throw invalid_argument(src->describe() + ": metadata has no 'config' object");
    r.config_source = src->describe();
    r.config = weights::parse_model_config(cfg->as_object(), r.config_source + " config");
    if (const json::value* ri = m.if_contains("rope_interleaved"); ri && ri->is_bool()) r.rope_interleaved = ri->as_bool();
    if (const json::value* ct = m.if_contains("chat_template"); ct && ct->is_string()) r.chat_template = ct->as_string();
    if (const json::value* tk = m.if_contains("tokenizer"); tk && tk->is_object()) r.gguf_tokenizer = tk->as_object();
    if (const json::value* gd = m.if_contains("generation_config"); gd && gd->is_object()) {
      r.generation_defaults = weights::parse_generation_defaults(gd->as_object(), r.config_source);
    }
    r.linear_plugin = pick.plugin;
    r.all_linears_via_plugin = true;
    r.source = std::move(src);
    log->info("loading {} through plugin {} (score {})", options.path, pick.plugin->name, pick.score);
    return r;
  }
  if (!hf) {
    std::string names;
    for (const auto& p : plugins.quant) names += (names.empty() ? "" : ", ") + p.name;
    throw invalid_argument("cannot load " + options.path +
                           ": not an HF model directory (config.json + safetensors), and no quant plugin claims it" +
                           " (loaded quant plugins: " + (names.empty() ? std::string("none") : names) + ")");
  }
  r.config = r.checkpoint->config();
  r.config_source = r.checkpoint->dir() + "/config.json";
  r.generation_defaults = r.checkpoint->generation_defaults();
  r.source = make_hf_source(*r.checkpoint);
  if (pick.plugin && pick.plugin->vtable->linear_create) {
    r.linear_plugin = pick.plugin;
    if (!r.config.quantization_config.empty()) r.quant_config_json = json::serialize(r.config.quantization_config);
    log->info("quantized linears of {} through plugin {}", options.path, pick.plugin->name);
  } else if (!r.config.quantization_config.empty()) {
    throw invalid_argument(r.config_source + ": quantization_config is set but no loaded quant plugin handles it");
  }
  const fs::path dir(r.checkpoint->dir());
  if (fs::exists(dir / "tokenizer.json", ec)) r.hf_tokenizer_dir = dir.string();
  r.chat_template = hf_chat_template(dir);
  return r;
}

}  // namespace aph::model
