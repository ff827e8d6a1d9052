// Where a model's tensors come from: an HF checkpoint (safetensors) or a
// quant plugin's model source (GGUF, ...). Both answer by HF tensor name.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/plugins/registry.hpp"
#include "core/weights/hf_checkpoint.hpp"

namespace aph::model {

struct SourceTensor {
  std::string name;
  int32_t dtype = -1;  // aph_dtype, or -1 for a format-specific encoding
  uint32_t format_type = 0;
  std::string type_name;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  uint64_t nbytes = 0;
  std::string where;  // file or source, for messages

  aph_weight_info info() const;
  int64_t numel() const;
  std::string describe() const;
};

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  virtual const SourceTensor* find(const std::string& name) const = 0;
  virtual std::vector<const SourceTensor*> with_prefix(const std::string& prefix) const = 0;
  virtual std::string describe() const = 0;
  // Throws aph::Error naming the tensor and the source.
  const SourceTensor& get(const std::string& name) const;
};

std::unique_ptr<WeightSource> make_hf_source(const weights::HfCheckpoint& checkpoint);

// Owns an open aph_model_source; closes it when destroyed.
class PluginSource : public WeightSource {
 public:
  PluginSource(const LoadedQuantPlugin& plugin, const aph_checkpoint_desc& desc);
  ~PluginSource() override;
  const SourceTensor* find(const std::string& name) const override;
  std::vector<const SourceTensor*> with_prefix(const std::string& prefix) const override;
  std::string describe() const override { return describe_; }
  const std::string& metadata_json() const { return metadata_; }

 private:
  const LoadedQuantPlugin& plugin_;
  aph_model_source* source_ = nullptr;
  std::string metadata_;
  std::string describe_;
  std::map<std::string, SourceTensor> tensors_;
};

}  // namespace aph::model
