// An HF model directory: config.json, generation_config.json and one or more
// memory-mapped safetensors shards (model.safetensors or the shards an
// index.json names), searchable by tensor name.
#pragma once

#include <boost/json.hpp>
#include <memory>
#include <string>
#include <vector>

#include "core/weights/hf_config.hpp"
#include "core/weights/safetensors.hpp"

namespace aph::weights {

class HfCheckpoint {
 public:
  // `path` is the directory (or a single .safetensors file with config.json
  // beside it). Throws aph::Error naming the file or field at fault.
  explicit HfCheckpoint(const std::string& path);

  const std::string& dir() const { return dir_; }
  const std::string& config_text() const { return config_text_; }
  const boost::json::object& config_json() const { return config_json_; }
  const ModelConfig& config() const { return config_; }
  const boost::json::object& generation_defaults() const { return generation_defaults_; }

  // nullptr when absent.
  const StoredTensor* find(const std::string& name) const;
  // Throws aph::Error naming the tensor and the directory when absent.
  const StoredTensor& get(const std::string& name) const;
  // Every tensor whose name starts with prefix (for a plugin's linear parts).
  std::vector<const StoredTensor*> with_prefix(const std::string& prefix) const;

 private:
  std::string dir_;
  std::string config_text_;
  boost::json::object config_json_;
  ModelConfig config_;
  boost::json::object generation_defaults_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
};

// True when `path` looks like an HF directory (has config.json and safetensors).
bool is_hf_directory(const std::string& path);

}  // namespace aph::weights
