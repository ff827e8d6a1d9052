// Reference fixtures for the model oracle tests: tiny HF-style model
// directories plus the logits and greedy continuation a reference
// implementation produced (numpy_llama.py in CI, HF transformers via
// make_reference.py on the GPU machine).
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>

namespace aph::oracle {

struct Fixture {
  std::string dir;
  std::string source;
  std::vector<int32_t> prompt, greedy;
  std::vector<double> margins;  // reference top1 - top2 logit at each greedy step
  int64_t vocab = 0;
  int64_t max_model_len = 0;     // the context to serve (0 = the model's)
  std::string model_file;        // a model file instead of the directory (GGUF fixtures)
  bool logits_last_only = false;  // logits.f32 holds only the last prompt row
  std::vector<float> logits;     // [prompt.size() or 1, vocab]

  int64_t logit_rows() const { return logits_last_only ? 1 : static_cast<int64_t>(prompt.size()); }
};

inline std::string fixture_root() {
  const char* src = std::getenv("APH_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/oracle/model/fixtures";
}

// Every fixture directory (one holding reference.json), sorted.
inline std::vector<std::string> fixture_dirs() {
  std::vector<std::string> out;
  std::error_code ec;
  if (!std::filesystem::exists(fixture_root(), ec)) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(fixture_root(), ec)) {
    if (e.is_regular_file() && e.path().filename() == "reference.json") out.push_back(e.path().parent_path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline Fixture load_fixture(const std::string& dir) {
  Fixture f;
  f.dir = dir;
  std::ifstream in(dir + "/reference.json");
  std::stringstream ss;
  ss << in.rdbuf();
  const boost::json::object ref = boost::json::parse(ss.str()).as_object();
  f.source = std::string(ref.at("source").as_string());
  for (const auto& v : ref.at("prompt_ids").as_array()) f.prompt.push_back(static_cast<int32_t>(v.to_number<int64_t>()));
  for (const auto& v : ref.at("greedy_ids").as_array()) f.greedy.push_back(static_cast<int32_t>(v.to_number<int64_t>()));
  for (const auto& v : ref.at("greedy_margins").as_array()) f.margins.push_back(v.to_number<double>());
  f.vocab = ref.at("vocab_size").to_number<int64_t>();
  if (const auto* v = ref.if_contains("max_model_len")) f.max_model_len = v->to_number<int64_t>();
  if (const auto* v = ref.if_contains("model_file")) f.model_file = std::string(v->as_string());
  if (const auto* v = ref.if_contains("logits_last_only")) f.logits_last_only = v->as_bool();
  f.logits.resize(f.logit_rows() * f.vocab);
  std::ifstream bin(dir + "/logits.f32", std::ios::binary);
  bin.read(reinterpret_cast<char*>(f.logits.data()), static_cast<std::streamsize>(f.logits.size() * sizeof(float)));
  if (!bin) f.logits.clear();
  return f;
}

// The worst row of max|a - b| / max|b| over `rows` rows of `vocab`.
inline double worst_relative_error(const float* a, const float* b, int64_t rows, int64_t vocab) {
  double worst = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double diff = 0, scale = 1e-30;
    for (int64_t i = 0; i < vocab; ++i) {
      diff = std::max(diff, std::fabs(static_cast<double>(a[r * vocab + i]) - b[r * vocab + i]));
      scale = std::max(scale, std::fabs(static_cast<double>(b[r * vocab + i])));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

inline double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, static_cast<double>(std::fabs(x)));
  return m;
}

}  // namespace aph::oracle
