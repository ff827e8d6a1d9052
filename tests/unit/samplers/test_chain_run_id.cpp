// aph_sampler_batch.run_id as the chain sets it: one nonzero id for every
// stage call of a sample() (rows of different orders included), a new one
// each call, on every chain of the process (chains may share a plugin state,
// and a plugin may key per-run caches by it).
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "core/common/tensor.hpp"
#include "core/sampling/sampler_chain.hpp"

namespace aph::test {
namespace {

struct Call {
  std::string stage;
  uint64_t run_id;
};
std::vector<Call> calls;

int marker;

aph_status row_create(void*, const char*, void** params, aph_error*) {
  *params = &marker;
  return APH_OK;
}
void row_destroy(void*, void*) {}

template <const char* kName>
aph_status record(void*, const aph_sampler_batch* batch, aph_stream, aph_error*) {
  const bool has_run_id = batch->size >= offsetof(aph_sampler_batch, run_id) + sizeof(batch->run_id);
  calls.push_back({kName, has_run_id ? batch->run_id : 0});
  return APH_OK;
}

constexpr char kA[] = "record_a";
constexpr char kB[] = "record_b";
constexpr char kPick[] = "record_pick";

aph_status record_and_pick(void* state, const aph_sampler_batch* batch, aph_stream stream, aph_error* err) {
  auto* chosen = static_cast<int32_t*>(batch->chosen.data);
  for (uint32_t r = 0; r < batch->n_rows; ++r) {
    if (batch->rows[r].params != nullptr && chosen[r] < 0) chosen[r] = 0;
  }
  return record<kPick>(state, batch, stream, err);
}

aph_sampler_stage stage(const char* name, int32_t position, uint32_t flags,
                        aph_status (*apply)(void*, const aph_sampler_batch*, aph_stream, aph_error*)) {
  aph_sampler_stage s{};
  s.size = sizeof(aph_sampler_stage);
  s.name = name;
  s.priority_aliases = "";
  s.kobold_id = -1;
  s.default_position = position;
  s.flags = flags;
  s.field_aliases = "";
  s.row_create = row_create;
  s.row_destroy = row_destroy;
  s.apply = apply;
  return s;
}

const aph_sampler_stage kStages[] = {
    stage(kA, 10, 0, &record<kA>), stage(kB, 20, 0, &record<kB>),
    stage(kPick, 1000, APH_SAMPLER_SELECTS | APH_SAMPLER_FIXED_POSITION, &record_and_pick)};

PluginRegistry recording_registry() {
  static const aph_sampler_vtable vtable = [] {
    aph_sampler_vtable v{};
    v.size = sizeof(aph_sampler_vtable);
    v.n_stages = 3;
    v.stages = kStages;
    return v;
  }();
  PluginRegistry r;
  r.samplers.push_back({"test-record", &vtable, nullptr});
  return r;
}

// One sample() over rows of the given requests; returns the run ids its
// stage calls saw.
std::vector<uint64_t> sample_once(sampling::SamplerChain& chain, const std::vector<std::string>& requests) {
  calls.clear();
  std::vector<std::unique_ptr<sampling::RequestSampling>> reqs;
  std::vector<sampling::RowInput> rows;
  for (const std::string& json : requests) {
    reqs.push_back(chain.prepare(boost::json::parse(json).as_object()));
    sampling::RowInput row;
    row.sampling = reqs.back().get();
    rows.push_back(row);
  }
  const auto n = static_cast<int64_t>(rows.size());
  Tensor logits = Tensor::empty({n, 4}, APH_DTYPE_F32, APH_DEVICE_CPU);
  for (int64_t i = 0; i < logits.numel(); ++i) logits.as<float>()[i] = 0.0f;
  std::vector<int32_t> chosen;
  chain.sample(logits, rows, chosen, nullptr);
  std::vector<uint64_t> ids;
  for (const Call& c : calls) ids.push_back(c.run_id);
  return ids;
}

sampling::ChainOptions options() {
  sampling::ChainOptions o;
  o.vocab_size = 4;
  return o;
}

TEST(ChainRunId, OneNonzeroIdPerSampleAndANewOneEachTime) {
  const PluginRegistry registry = recording_registry();
  auto chain = sampling::SamplerChain::create(registry, options());
  std::set<uint64_t> seen;
  for (int step = 0; step < 4; ++step) {
    // Two orders: the rows run as two groups, each through every stage.
    const std::vector<uint64_t> ids =
        sample_once(*chain, {R"({})", R"({"sampler_order": ["record_b", "record_a"]})"});
    ASSERT_EQ(ids.size(), 6u) << "three stages for each of two groups";
    for (uint64_t id : ids) {
      EXPECT_NE(id, 0u);
      EXPECT_EQ(id, ids[0]) << "every stage call of one sample() shares the run id";
    }
    EXPECT_TRUE(seen.insert(ids[0]).second) << "run id " << ids[0] << " reused at step " << step;
  }
}

TEST(ChainRunId, DistinctAcrossChains) {
  const PluginRegistry registry = recording_registry();
  auto a = sampling::SamplerChain::create(registry, options());
  auto b = sampling::SamplerChain::create(registry, options());
  std::set<uint64_t> seen;
  for (int step = 0; step < 3; ++step) {
    for (sampling::SamplerChain* chain : {a.get(), b.get()}) {
      const std::vector<uint64_t> ids = sample_once(*chain, {R"({})"});
      ASSERT_FALSE(ids.empty());
      EXPECT_NE(ids[0], 0u);
      EXPECT_TRUE(seen.insert(ids[0]).second) << "run id " << ids[0] << " given by two chains";
    }
  }
}

}  // namespace
}  // namespace aph::test
