// A GGUF file seen as an HF-style model (quant.h "model source"): config.json
// fields derived from the metadata, tokenizer keys, and tensors under HF names
// with logical [out, in] shapes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "aphrodite/quant.h"
#include "plugins/quant-gguf/container/gguf_file.hpp"

namespace aph::gguf {

class ModelSource {
 public:
  explicit ModelSource(const std::string& path);

  const std::string& metadata_json() const { return metadata_json_; }
  uint64_t tensor_count() const { return tensors_.size(); }
  // Throws aph::Error for an index out of range.
  aph_weight_info tensor(uint64_t index) const;

  const GgufFile& file() const { return *file_; }

 private:
  struct Entry {
    std::string hf_name;
    const TensorInfo* info;
    int32_t dtype;
    std::string type_name;
  };
  std::unique_ptr<GgufFile> file_;
  std::vector<Entry> tensors_;
  std::string metadata_json_;
};

// GGUF tensor name -> HF name (FORMATS.md §1.3); unknown names pass through.
std::string hf_tensor_name(const std::string& gguf_name);

// The "config" object for a parsed file; throws aph::Error naming the file
// and key when a required key is missing or has the wrong type.
boost::json::object hf_config(const GgufFile& file);

}  // namespace aph::gguf
