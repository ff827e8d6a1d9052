// A sampler chain over the real aph_samplers plugin on the CPU, plus the
// helpers the stage tests share: random logits, running one step, kept sets.
#pragma once

#include <boost/json.hpp>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/common/tensor.hpp"
#include "core/sampling/sampler_chain.hpp"
#include "tests/unit/samplers/plugin_fixture.hpp"

namespace aph::test {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Step {
  std::vector<float> logits;  // processed, row-major [rows, vocab]
  std::vector<int32_t> chosen;
  std::vector<sampling::TokenLogprobs> logprobs;
};

struct RowSpec {
  std::string request = "{}";
  std::vector<int32_t> tokens;  // prompt then output
  int64_t n_prompt = 0;
  uint64_t seed = 1;
  uint64_t step = 0;
};

class ChainHarness {
 public:
  explicit ChainHarness(int32_t vocab, sampling::ChainOptions options = {},
                        const std::vector<std::string>& extra_plugins = {}) {
    plugins_.load(plugin_path("aph_samplers.so"));
    for (const std::string& p : extra_plugins) plugins_.load(p);
    options.vocab_size = vocab;
    chain_ = sampling::SamplerChain::create(plugins_.registry(), options);
    vocab_ = vocab;
  }

  std::unique_ptr<sampling::RequestSampling> prepare(const std::string& json) const {
    return chain_->prepare(boost::json::parse(json).as_object());
  }

  // One step over rows sharing `logits` (one row of `vocab` each).
  Step run(const std::vector<RowSpec>& specs, const std::vector<float>& logits) {
    std::vector<std::unique_ptr<sampling::RequestSampling>> reqs;
    std::vector<sampling::RowInput> rows;
    for (const RowSpec& s : specs) {
      reqs.push_back(prepare(s.request));
      sampling::RowInput r;
      r.sampling = reqs.back().get();
      r.tokens = s.tokens.data();
      r.n_prompt = s.n_prompt;
      r.n_tokens = static_cast<int64_t>(s.tokens.size());
      r.seed = s.seed;
      r.step = s.step;
      rows.push_back(r);
    }
    Tensor t = Tensor::empty({static_cast<int64_t>(specs.size()), vocab_}, APH_DTYPE_F32, APH_DEVICE_CPU);
    std::copy(logits.begin(), logits.end(), t.as<float>());
    Step out;
    chain_->sample(t, rows, out.chosen, &out.logprobs);
    out.logits.assign(t.as<float>(), t.as<float>() + t.numel());
    return out;
  }

  Step run1(const std::string& request, const std::vector<float>& logits, std::vector<int32_t> tokens = {},
            int64_t n_prompt = 0, uint64_t seed = 1, uint64_t step = 0) {
    return run({RowSpec{request, std::move(tokens), n_prompt, seed, step}}, logits);
  }

  sampling::SamplerChain& chain() { return *chain_; }
  int32_t vocab() const { return vocab_; }

 private:
  LoadedPlugins plugins_;
  std::unique_ptr<sampling::SamplerChain> chain_;
  int32_t vocab_ = 0;
};

inline std::vector<float> random_logits(int64_t n, uint32_t seed, float scale = 3.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

inline std::set<int32_t> kept(const std::vector<float>& logits, int64_t begin = 0, int64_t end = -1) {
  if (end < 0) end = static_cast<int64_t>(logits.size());
  std::set<int32_t> s;
  for (int64_t i = begin; i < end; ++i) {
    if (logits[i] != kNegInf) s.insert(static_cast<int32_t>(i - begin));
  }
  return s;
}

inline std::vector<double> probs_of(const std::vector<float>& x) {
  double m = -std::numeric_limits<double>::infinity();
  for (float v : x) m = std::max(m, static_cast<double>(v));
  std::vector<double> p(x.size());
  double z = 0;
  for (size_t i = 0; i < x.size(); ++i) z += p[i] = std::exp(static_cast<double>(x[i]) - m);
  for (double& v : p) v /= z;
  return p;
}

}  // namespace aph::test
