// Decides where a model comes from (HF directory or a quant plugin's
// container) and gathers what the runner needs: config, tensors, tokenizer
// data, chat template, the plugin that builds quantized linears.
#pragma once

#include <boost/json.hpp>
#include <memory>
#include <string>

#include "core/model/model_runner.hpp"
#include "core/model/weight_source.hpp"

namespace aph::model {

struct ResolvedModel {
  std::unique_ptr<weights::HfCheckpoint> checkpoint;  // HF directories
  std::unique_ptr<WeightSource> source;
  weights::ModelConfig config;
  std::string config_source;  // for messages
  const LoadedQuantPlugin* linear_plugin = nullptr;
  bool all_linears_via_plugin = false;
  std::string quant_config_json;
  bool rope_interleaved = false;
  boost::json::object generation_defaults;
  std::string chat_template;
  // Exactly one of these describes the tokenizer.
  std::string hf_tokenizer_dir;
  boost::json::object gguf_tokenizer;
};

// Throws aph::Error naming the path, plugin or field at fault.
ResolvedModel resolve_model(const LoadOptions& options, const PluginRegistry& plugins);

}  // namespace aph::model
