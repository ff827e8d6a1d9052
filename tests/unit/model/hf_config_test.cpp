#include <gtest/gtest.h>

#include "core/common/error.hpp"
#include "core/weights/hf_config.hpp"

namespace {

using namespace aph::weights;

boost::json::object parse(const std::string& s) { return boost::json::parse(s).as_object(); }

const char* kBase = R"({"architectures":["MistralForCausalLM"],"model_type":"mistral","hidden_size":5120,
  "intermediate_size":14336,"num_hidden_layers":40,"num_attention_heads":32,"num_key_value_heads":8,"head_dim":128,
  "rms_norm_eps":1e-5,"rope_theta":1000000.0,"max_position_embeddings":1024000,"vocab_size":131072,
  "tie_word_embeddings":false,"torch_dtype":"bfloat16","bos_token_id":1,"eos_token_id":[2, 7],"sliding_window":null})";

TEST(HfConfig, ReadsEveryFieldAndNeverDerivesAGivenHeadDim) {
  ModelConfig c = parse_model_config(parse(kBase), "nemo/config.json");
  EXPECT_EQ(c.architectures.at(0), "MistralForCausalLM");
  EXPECT_EQ(c.head_dim, 128);  // hidden/heads would be 160
  EXPECT_EQ(c.num_key_value_heads, 8);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{2, 7}));
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_EQ(c.rope_scaling.type, RopeType::Default);
}

TEST(HfConfig, DefaultsKvHeadsAndDerivesHeadDim) {
  auto o = parse(kBase);
  o.erase("head_dim");
  o.erase("num_key_value_heads");
  o["eos_token_id"] = 2;
  ModelConfig c = parse_model_config(o, "c.json");
  EXPECT_EQ(c.head_dim, 160);
  EXPECT_EQ(c.num_key_value_heads, 32);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{2}));
}

TEST(HfConfig, RopeScalingAndRopeParameters) {
  auto o = parse(kBase);
  o["rope_scaling"] = parse(R"({"rope_type":"llama3","factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,
                               "original_max_position_embeddings":8192})");
  ModelConfig c = parse_model_config(o, "c.json");
  EXPECT_EQ(c.rope_scaling.type, RopeType::Llama3);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  o.erase("rope_scaling");
  o["rope_parameters"] = parse(R"({"rope_type":"yarn","factor":4.0,"rope_theta":50000.0,"beta_fast":16})");
  c = parse_model_config(o, "c.json");
  EXPECT_EQ(c.rope_scaling.type, RopeType::Yarn);
  EXPECT_DOUBLE_EQ(c.rope_theta, 50000.0);
  EXPECT_DOUBLE_EQ(c.rope_scaling.beta_fast, 16.0);
  o["rope_parameters"] = parse(R"({"type":"linear","factor":2})");
  EXPECT_EQ(parse_model_config(o, "c.json").rope_scaling.type, RopeType::Linear);
  o["rope_parameters"] = parse(R"({"type":"dynamic","factor":2})");
  EXPECT_EQ(parse_model_config(o, "c.json").rope_scaling.type, RopeType::Dynamic);
}

TEST(HfConfig, ErrorsNameTheField) {
  auto expect_error = [](boost::json::object o, const std::string& field) {
    try {
      parse_model_config(o, "m/config.json");
      ADD_FAILURE() << "accepted bad " << field;
    } catch (const aph::Error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("m/config.json"), std::string::npos) << e.what();
    }
  };
  auto o = parse(kBase);
  o["hidden_size"] = "big";
  expect_error(o, "hidden_size");
  o = parse(kBase);
  o.erase("vocab_size");
  expect_error(o, "vocab_size");
  o = parse(kBase);
  o["num_key_value_heads"] = 5;
  expect_error(o, "num_key_value_heads");
  o = parse(kBase);
  o["rope_scaling"] = parse(R"({"rope_type":"ntk-by-parts","factor":2})");
  expect_error(o, "rope_type");
  o = parse(kBase);
  o["rope_scaling"] = parse(R"({"rope_type":"longrope","short_factor":[1.0]})");
  expect_error(o, "long");
  o = parse(kBase);
  o["tie_word_embeddings"] = 1;
  expect_error(o, "tie_word_embeddings");
  o = parse(kBase);
  o["eos_token_id"] = parse(R"({"a":1})");
  expect_error(o, "eos_token_id");
}

TEST(HfConfig, GenerationDefaultsKeepSamplingFields) {
  auto g = parse(R"({"temperature":0.6,"top_p":0.9,"do_sample":true,"eos_token_id":[1,2],"transformers_version":"4.4"})");
  auto d = parse_generation_defaults(g, "generation_config.json");
  EXPECT_DOUBLE_EQ(d.at("temperature").as_double(), 0.6);
  EXPECT_TRUE(d.contains("eos_token_id"));
  EXPECT_FALSE(d.contains("transformers_version"));
  EXPECT_THROW(parse_generation_defaults(parse(R"({"top_k":"x"})"), "g.json"), aph::Error);
}

}  // namespace
