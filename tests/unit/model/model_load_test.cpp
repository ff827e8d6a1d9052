// Loading HF directories: sharded checkpoints give the same logits as the
// single file, and bad inputs fail with errors naming what is wrong.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include "core/common/error.hpp"
#include "core/model/decoder.hpp"
#include "core/model/model_runner.hpp"
#include "core/model/sequence.hpp"
#include "core/weights/safetensors.hpp"

namespace {

namespace fs = std::filesystem;

fs::path fixture(const std::string& name) {
  const char* src = std::getenv("APH_SOURCE_DIR");
  return fs::path(src ? src : ".") / "tests/oracle/model/fixtures/numpy" / name;
}

fs::path scratch(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("aph_model_load_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

void write_shard(const fs::path& path, const std::vector<const aph::weights::StoredTensor*>& ts) {
  boost::json::object header;
  uint64_t off = 0;
  for (const auto* t : ts) {
    boost::json::array shape;
    for (int64_t d : t->shape) shape.push_back(d);
    header[t->name] = {{"dtype", t->dtype_name}, {"shape", shape}, {"data_offsets", {off, off + t->nbytes}}};
    off += t->nbytes;
  }
  std::string h = boost::json::serialize(header);
  std::ofstream out(path, std::ios::binary);
  uint64_t n = h.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << h;
  for (const auto* t : ts) out.write(reinterpret_cast<const char*>(t->data), static_cast<std::streamsize>(t->nbytes));
}

std::vector<float> prompt_logits(const std::string& dir) {
  aph::model::LoadOptions o;
  o.path = dir;
  aph::PluginRegistry none;
  auto runner = aph::model::ModelRunner::load(o, none);
  aph::model::SingleSequence seq(*runner, 16);
  return seq.append({5, 9, 3, 7}, true);
}

std::string load_error(const std::string& dir) {
  try {
    prompt_logits(dir);
  } catch (const aph::Error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelLoad, ShardedCheckpointMatchesSingleFile) {
  fs::path src = fixture("llama_gqa2");
  fs::path dst = scratch("sharded");
  fs::copy_file(src / "config.json", dst / "config.json");
  aph::weights::SafetensorsFile whole((src / "model.safetensors").string());
  std::vector<const aph::weights::StoredTensor*> a, b;
  boost::json::object weight_map;
  for (const auto& [name, t] : whole.tensors()) {
    const bool first = name.find("layers.1.") == std::string::npos;
    (first ? a : b).push_back(&t);
    weight_map[name] = first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  write_shard(dst / "model-00001-of-00002.safetensors", a);
  write_shard(dst / "model-00002-of-00002.safetensors", b);
  std::ofstream(dst / "model.safetensors.index.json")
      << boost::json::serialize(boost::json::object{{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}});
  EXPECT_EQ(prompt_logits(dst.string()), prompt_logits(src.string()));
  fs::remove_all(dst);
}

TEST(ModelLoad, UnsupportedArchitectureListsSupportedOnes) {
  fs::path dst = scratch("arch");
  fs::copy(fixture("llama_gqa2"), dst);
  std::ifstream in(dst / "config.json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto cfg = boost::json::parse(ss.str()).as_object();
  cfg["architectures"] = boost::json::array{"GPTNeoXForCausalLM"};
  std::ofstream(dst / "config.json") << boost::json::serialize(cfg);
  const std::string e = load_error(dst.string());
  EXPECT_NE(e.find("GPTNeoXForCausalLM"), std::string::npos) << e;
  for (const char* name : {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"}) {
    EXPECT_NE(e.find(name), std::string::npos) << e;
  }
  fs::remove_all(dst);
}

TEST(ModelLoad, MissingOrMisshapenTensorIsNamed) {
  fs::path src = fixture("llama_gqa2");
  fs::path dst = scratch("missing");
  fs::copy_file(src / "config.json", dst / "config.json");
  aph::weights::SafetensorsFile whole((src / "model.safetensors").string());
  std::vector<const aph::weights::StoredTensor*> keep;
  for (const auto& [name, t] : whole.tensors())
    if (name != "model.layers.1.mlp.up_proj.weight") keep.push_back(&t);
  write_shard(dst / "model.safetensors", keep);
  std::string e = load_error(dst.string());
  EXPECT_NE(e.find("model.layers.1.mlp.up_proj.weight"), std::string::npos) << e;

  // A config that disagrees with the tensors: the shape check names the tensor.
  std::ifstream in(src / "config.json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto cfg = boost::json::parse(ss.str()).as_object();
  cfg["intermediate_size"] = 65;
  std::ofstream(dst / "config.json") << boost::json::serialize(cfg);
  fs::copy_file(src / "model.safetensors", dst / "model.safetensors", fs::copy_options::overwrite_existing);
  e = load_error(dst.string());
  EXPECT_NE(e.find("gate_proj"), std::string::npos) << e;
  fs::remove_all(dst);
}

TEST(ModelLoad, TruncatedShardIsAnError) {
  fs::path src = fixture("llama_gqa2");
  fs::path dst = scratch("truncated");
  fs::copy_file(src / "config.json", dst / "config.json");
  fs::copy_file(src / "model.safetensors", dst / "model.safetensors");
  fs::resize_file(dst / "model.safetensors", fs::file_size(dst / "model.safetensors") - 100);
  const std::string e = load_error(dst.string());
  EXPECT_NE(e.find("model.safetensors"), std::string::npos) << e;
  fs::remove_all(dst);
}

TEST(ModelLoad, NotAModelIsAClearError) {
  const std::string e = load_error("/nonexistent/model");
  EXPECT_NE(e.find("/nonexistent/model"), std::string::npos);
}

}  // namespace
