// The CPU model path against reference logits and greedy continuations
// (fixtures/numpy from numpy_llama.py; fixtures/hf from HF transformers once
// make_reference.py has run on the GPU machine). Tolerance: 1e-3 relative.
#include <gtest/gtest.h>

#include "core/model/model_runner.hpp"
#include "core/model/sequence.hpp"
#include "tests/oracle/model/fixture.hpp"

namespace {

using aph::oracle::Fixture;

class ModelOracleCpu : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelOracleCpu, LogitsAndGreedyMatchReference) {
  Fixture f = aph::oracle::load_fixture(GetParam());
  ASSERT_FALSE(f.logits.empty()) << "missing logits.f32 in " << f.dir;
  aph::model::LoadOptions opts;
  opts.path = f.dir;
  opts.cpu_threads = 2;
  aph::PluginRegistry none;
  auto runner = aph::model::ModelRunner::load(opts, none);
  ASSERT_EQ(runner->info().vocab_size, f.vocab);

  aph::model::SingleSequence seq(*runner, static_cast<int64_t>(f.prompt.size() + f.greedy.size() + 1));
  std::vector<float> logits = seq.append(f.prompt, /*all_logits=*/true);
  ASSERT_EQ(logits.size(), f.logits.size());
  const double err = aph::oracle::worst_relative_error(logits.data(), f.logits.data(),
                                                       static_cast<int64_t>(f.prompt.size()), f.vocab);
  EXPECT_LE(err, 1e-3) << f.dir << " (" << f.source << ")";

  // Greedy decode through the KV cache, one token per step.
  std::vector<float> last(logits.end() - f.vocab, logits.end());
  const double scale = aph::oracle::max_abs(f.logits);
  for (size_t step = 0; step < f.greedy.size(); ++step) {
    const int32_t next = aph::model::argmax(last.data(), f.vocab);
    if (next != f.greedy[step]) {
      // fp32 against a float64 reference: only an exact tie may flip.
      EXPECT_LT(f.margins[step], 1e-5 * scale) << f.dir << ": greedy diverges at step " << step << " (got " << next
                                               << ", want " << f.greedy[step] << ")";
      break;
    }
    last = seq.append({next});
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ModelOracleCpu, ::testing::ValuesIn(aph::oracle::fixture_dirs()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = std::filesystem::path(info.param).parent_path().filename().string() +
                                              "_" + std::filesystem::path(info.param).filename().string();
                           for (char& c : name)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

TEST(ModelOracleCpu, FixturesExist) { EXPECT_GE(aph::oracle::fixture_dirs().size(), 10u); }

}  // namespace
