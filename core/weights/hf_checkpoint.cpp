#include "core/weights/hf_checkpoint.hpp"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/common/error.hpp"
#include "core/common/log.hpp"

namespace aph::weights {

namespace fs = std::filesystem;
namespace json = boost::json;

bool is_hf_directory(const std::string& path) {
  std::error_code ec;
  fs::path p(path);
  if (fs::is_regular_file(p, ec) && p.extension() == ".safetensors") p = p.parent_path();
  return fs::is_directory(p, ec) && fs::exists(p / "config.json", ec) &&
         (fs::exists(p / "model.safetensors", ec) || fs::exists(p / "model.safetensors.index.json", ec) ||
          fs::is_regular_file(path, ec));
}

HfCheckpoint::HfCheckpoint(const std::string& path) {
  std::error_code ec;
  fs::path p(path);
  std::vector<fs::path> shards;
  if (fs::is_regular_file(p, ec) && p.extension() == ".safetensors") {
    shards.push_back(p);
    p = p.parent_path();
  }
  dir_ = p.string();
  if (!fs::is_directory(p, ec)) throw invalid_argument("model path " + path + " is not a directory");

  fs::path config_path = p / "config.json";
  {
    std::ifstream in(config_path, std::ios::binary);
    if (!in) throw invalid_argument(config_path.string() + ": missing (an HF model directory needs config.json)");
    std::stringstream ss;
    ss << in.rdbuf();
    config_text_ = ss.str();
  }
  json::value cfg;
  try {
    cfg = json::parse(config_text_);
  } catch (const std::exception& e) {
    throw invalid_argument(config_path.string() + ": not valid JSON: " + e.what());
  }
  if (!cfg.is_object()) throw invalid_argument(config_path.string() + ": not a JSON object");
  config_json_ = cfg.as_object();
  config_ = parse_model_config(config_json_, config_path.string());

  fs::path gen_path = p / "generation_config.json";
  if (fs::exists(gen_path, ec)) {
    json::value g = read_json_file(gen_path.string());
    if (!g.is_object()) throw invalid_argument(gen_path.string() + ": not a JSON object");
    generation_defaults_ = parse_generation_defaults(g.as_object(), gen_path.string());
  }

  if (shards.empty()) {
    fs::path index_path = p / "model.safetensors.index.json";
    if (fs::exists(p / "model.safetensors", ec)) {
      shards.push_back(p / "model.safetensors");
    } else if (fs::exists(index_path, ec)) {
      json::value idx = read_json_file(index_path.string());
      const json::value* wm = idx.is_object() ? idx.as_object().if_contains("weight_map") : nullptr;
      if (!wm || !wm->is_object()) throw invalid_argument(index_path.string() + ": missing object 'weight_map'");
      std::set<std::string> names;
      for (const auto& [tensor, file] : wm->as_object()) {
        if (!file.is_string()) {
          throw invalid_argument(index_path.string() + ": weight_map['" + std::string(tensor) + "'] is not a file name");
        }
        std::string f(file.as_string());
        if (f.find('/') != std::string::npos || f.find("..") != std::string::npos) {
          throw invalid_argument(index_path.string() + ": weight_map names a file outside the directory: " + f);
        }
        names.insert(f);
      }
      for (const auto& n : names) shards.push_back(p / n);
    } else {
      throw invalid_argument(dir_ + ": no model.safetensors or model.safetensors.index.json");
    }
  }
  auto log = logger("weights");
  for (const auto& shard : shards) {
    files_.push_back(std::make_unique<SafetensorsFile>(shard.string()));
    log->info("mapped {} ({} tensors)", shard.string(), files_.back()->tensors().size());
  }
  // A tensor in two shards would make the choice arbitrary.
  std::set<std::string> seen;
  for (const auto& f : files_) {
    for (const auto& [name, t] : f->tensors()) {
      if (!seen.insert(name).second) throw invalid_argument(f->path() + ": tensor '" + name + "' also appears in another shard");
    }
  }
}

const StoredTensor* HfCheckpoint::find(const std::string& name) const {
  for (const auto& f : files_) {
    auto it = f->tensors().find(name);
    if (it != f->tensors().end()) return &it->second;
  }
  return nullptr;
}

const StoredTensor& HfCheckpoint::get(const std::string& name) const {
  const StoredTensor* t = find(name);
  if (!t) throw invalid_argument(dir_ + ": tensor '" + name + "' is missing from the checkpoint");
  return *t;
}

std::vector<const StoredTensor*> HfCheckpoint::with_prefix(const std::string& prefix) const {
  std::vector<const StoredTensor*> out;
  for (const auto& f : files_) {
    for (auto it = f->tensors().lower_bound(prefix); it != f->tensors().end() && it->first.rfind(prefix, 0) == 0; ++it) {
      out.push_back(&it->second);
    }
  }
  return out;
}

}  // namespace aph::weights
