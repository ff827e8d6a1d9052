// The full default chain with DRY, penalties, XTC, min-p and temperature on
// every row: batch 64 x vocab 128k, 8k tokens of history per row. Prints
// ms/step against the 0.5 ms target, then each stage alone, with the logits
// traffic of one pass over the batch as GB/s (a lower bound on what a stage
// moves). Last, a single stream (1 x 128k): what each stage adds to a decode
// step's GPU time, the figure issue 7's "every stage within 5 % of greedy"
// turns on.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/gpu/samplers/gpu_chain.hpp"

namespace {

using namespace aph;
constexpr int kRows = 64;
constexpr int32_t kVocab = 128 * 1024;
constexpr int kHistory = 8192;

// Holds the stream for a while, as a forward pass does in the engine: the
// chain's launches queue up behind it, so what is timed after it is the GPU
// work alone, not the host's launch cost.
void hold_stream(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(3)); }

// ms per step over `n_rows` rows. behind_forward: GPU time from an event after
// a host hold (above) to the step's end, instead of host wall time.
double run(test::DeviceChain& c, const char* request, const Tensor& pristine, Tensor& logits,
           const std::vector<std::vector<int32_t>>& host, const std::vector<int32_t*>& histories, int steps,
           int n_rows = kRows, bool behind_forward = false) {
  std::vector<std::unique_ptr<sampling::RequestSampling>> reqs;
  std::vector<sampling::RowInput> rows;
  cudaEvent_t start = nullptr, end = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&end);
  for (int r = 0; r < n_rows; ++r) {
    reqs.push_back(c.chain->prepare(boost::json::parse(request).as_object()));
    sampling::RowInput row;
    row.sampling = reqs.back().get();
    row.tokens = host[r].data();
    row.tokens_device = histories[r];  // as the engine keeps them: already on the device
    row.n_tokens = kHistory;
    row.n_prompt = kHistory - 512;
    row.seed = 42 + r;
    rows.push_back(row);
  }
  std::vector<int32_t> chosen;
  double total = 0;
  for (int s = -3; s < steps; ++s) {
    Tensor view = logits.rows(0, n_rows);
    cudaMemcpyAsync(view.data(), pristine.data(), view.nbytes(), cudaMemcpyDeviceToDevice, c.stream);
    cudaStreamSynchronize(c.stream);
    for (auto& r : rows) r.step = static_cast<uint64_t>(s + 3);
    if (behind_forward) {
      cudaLaunchHostFunc(c.stream, hold_stream, nullptr);
      cudaEventRecord(start, c.stream);
    }
    const auto t0 = std::chrono::steady_clock::now();
    c.chain->sample(view, rows, chosen, nullptr);
    const auto t1 = std::chrono::steady_clock::now();
    float gpu_ms = 0;
    if (behind_forward) {
      cudaEventRecord(end, c.stream);
      cudaEventSynchronize(end);
      cudaEventElapsedTime(&gpu_ms, start, end);
    }
    if (s >= 0) total += behind_forward ? gpu_ms : std::chrono::duration<double, std::milli>(t1 - t0).count();
  }
  cudaEventDestroy(start);
  cudaEventDestroy(end);
  return total / steps;
}

}  // namespace

int main(int argc, char** argv) {
  // --single: only the single-stream table (e.g. once more under APH_ROW_BLOCKS).
  const bool single_only = argc > 1 && std::string(argv[1]) == "--single";
  test::DeviceChain c(0, kVocab);
  std::mt19937 gen(1);
  std::normal_distribution<float> logit(0.0f, 3.0f);
  std::uniform_int_distribution<int32_t> tok(0, kVocab - 1);
  std::vector<float> host_logits(static_cast<size_t>(kRows) * kVocab);
  for (float& x : host_logits) x = logit(gen);
  Tensor pristine = Tensor::empty({kRows, kVocab}, APH_DTYPE_F32, 0);
  Tensor logits = Tensor::empty({kRows, kVocab}, APH_DTYPE_F32, 0);
  copy_bytes(pristine.data(), 0, host_logits.data(), APH_DEVICE_CPU, host_logits.size() * sizeof(float));
  std::vector<Tensor> history_storage;
  std::vector<int32_t*> histories;
  std::vector<std::vector<int32_t>> host(kRows);
  for (int r = 0; r < kRows; ++r) {
    std::vector<int32_t>& h = host[r];
    h.resize(kHistory);
    for (int32_t& t : h) t = tok(gen);
    for (int k = 0; k < 64; ++k) h[kHistory - 64 + k] = h[1000 + k];  // a long repeat for DRY
    history_storage.push_back(Tensor::empty({kHistory}, APH_DTYPE_I32, 0));
    copy_bytes(history_storage.back().data(), 0, h.data(), APH_DEVICE_CPU, h.size() * sizeof(int32_t));
    histories.push_back(history_storage.back().as<int32_t>());
  }
  const double bytes = static_cast<double>(kRows) * kVocab * sizeof(float);
  struct Case {
    const char* name;
    const char* request;
  } cases[] = {
      {"full default chain", R"({"dry_multiplier": 0.8, "dry_base": 1.75, "dry_allowed_length": 2,
          "dry_sequence_breaker_ids": [13, 29], "repetition_penalty": 1.1, "frequency_penalty": 0.1,
          "presence_penalty": 0.1, "xtc_threshold": 0.1, "xtc_probability": 1.0, "min_p": 0.05,
          "temperature": 0.8})"},
      {"selection only (multinomial)", R"({})"},
      {"selection only (greedy)", R"({"temperature": 0})"},
      {"dry", R"({"dry_multiplier": 0.8, "dry_sequence_breaker_ids": [13, 29]})"},
      {"penalties", R"({"repetition_penalty": 1.1, "frequency_penalty": 0.1, "presence_penalty": 0.1})"},
      {"xtc (fires every step)", R"({"xtc_threshold": 0.1, "xtc_probability": 1.0})"},
      {"min_p", R"({"min_p": 0.05})"},
      {"temperature", R"({"temperature": 0.8})"},
      {"top_k", R"({"top_k": 40})"},
      {"top_p", R"({"top_p": 0.9})"},
      // The sorted stages on the few tokens a truncation leaves (the compact
      // path); top_k alone above is their baseline.
      {"top_k 100", R"({"top_k": 100})"},
      {"top_k 100 + tfs", R"({"top_k": 100, "tfs": 0.95})"},
      {"top_k 100 + skew", R"({"top_k": 100, "skew": 0.1})"},
      {"top_k 100 + mirostat v1", R"({"top_k": 100, "mirostat_mode": 1, "mirostat_tau": 5, "mirostat_eta": 0.1})"},
      {"top_k 100 + mirostat v2", R"({"top_k": 100, "mirostat_mode": 2, "mirostat_tau": 5, "mirostat_eta": 0.1})"},
  };
  std::printf("sampler chain, batch %d x vocab %d, %d tokens of history per row\n", kRows, kVocab, kHistory);
  for (const Case& k : cases) {
    if (single_only) break;
    const double ms = run(c, k.request, pristine, logits, host, histories, 20);
    std::printf("%-32s %8.3f ms/step  %7.1f GB/s per logits pass", k.name, ms, bytes / (ms * 1e-3) / 1e9);
    if (k.request == cases[0].request) std::printf("  (target <= 0.5 ms: %s)", ms <= 0.5 ? "met" : "MISSED");
    std::printf("\n");
  }

  // A single stream: each stage's cost on top of greedy selection, in GPU
  // time. "every stage" is bench/samplers/price_chain.sh's request.
  const Case single[] = {
      {"greedy", R"({"temperature": 0})"},
      {"multinomial", R"({})"},
      {"every stage", R"({"dry_multiplier": 0.8, "repetition_penalty": 1.1, "frequency_penalty": 0.1,
          "presence_penalty": 0.1, "rep_pen_range": 1024, "no_repeat_ngram_size": 4, "temperature": 0.9,
          "dynatemp_min": 0.5, "dynatemp_max": 1.5, "nsigma": 3.0, "top_k": 100, "top_p": 0.95, "top_a": 0.05,
          "min_p": 0.02, "tfs": 0.98, "eta_cutoff": 3.0, "epsilon_cutoff": 3.0, "typical_p": 0.98,
          "smoothing_factor": 0.2, "skew": 0.1, "xtc_threshold": 0.1, "xtc_probability": 0.5})"},
      {"default chain", cases[0].request},
      {"dry", R"({"dry_multiplier": 0.8, "dry_sequence_breaker_ids": [13, 29]})"},
      {"penalties + range", R"({"repetition_penalty": 1.1, "frequency_penalty": 0.1, "presence_penalty": 0.1,
          "rep_pen_range": 1024})"},
      {"no_repeat_ngram 4", R"({"no_repeat_ngram_size": 4})"},
      {"dynatemp", R"({"temperature": 0.9, "dynatemp_min": 0.5, "dynatemp_max": 1.5})"},
      {"nsigma", R"({"nsigma": 3.0})"},
      {"top_k 100", R"({"top_k": 100})"},
      {"top_p", R"({"top_p": 0.95})"},
      {"top_a", R"({"top_a": 0.05})"},
      {"min_p", R"({"min_p": 0.02})"},
      {"tfs (full row)", R"({"tfs": 0.98})"},
      {"eta + epsilon", R"({"eta_cutoff": 3.0, "epsilon_cutoff": 3.0})"},
      {"typical_p", R"({"typical_p": 0.98})"},
      {"smoothing", R"({"smoothing_factor": 0.2})"},
      {"skew (full row)", R"({"skew": 0.1})"},
      {"xtc", R"({"xtc_threshold": 0.1, "xtc_probability": 1.0})"},
      {"top_k 100 + tfs + skew + typical", R"({"top_k": 100, "tfs": 0.98, "skew": 0.1, "typical_p": 0.98})"},
  };
  std::printf("\nsingle stream, 1 x vocab %d, GPU time behind a held stream (host launch cost hidden)\n", kVocab);
  double greedy = 0;
  for (const Case& k : single) {
    const double ms = run(c, k.request, pristine, logits, host, histories, 30, 1, true);
    if (k.request == single[0].request) greedy = ms;
    std::printf("%-34s %8.4f ms/step  %+8.4f ms over greedy\n", k.name, ms, ms - greedy);
  }

  // What each stage costs inside "every stage" (on the few tokens a
  // truncation leaves, for the stages after top_k): the chain without it.
  const boost::json::object every = boost::json::parse(single[2].request).as_object();
  const double every_ms = run(c, single[2].request, pristine, logits, host, histories, 30, 1, true);
  std::printf("\nevery stage %.4f ms/step; without one stage:\n", every_ms);
  const std::vector<std::vector<const char*>> stages = {
      {"dry_multiplier"}, {"repetition_penalty", "frequency_penalty", "presence_penalty", "rep_pen_range"},
      {"no_repeat_ngram_size"}, {"dynatemp_min", "dynatemp_max"}, {"nsigma"}, {"top_k"}, {"top_p"}, {"top_a"},
      {"min_p"}, {"tfs"}, {"eta_cutoff"}, {"epsilon_cutoff"}, {"typical_p"}, {"smoothing_factor"}, {"skew"},
      {"xtc_threshold", "xtc_probability"}};
  for (const auto& keys : stages) {
    boost::json::object without = every;
    for (const char* k : keys) without.erase(k);
    const std::string request = boost::json::serialize(without);
    const double ms = run(c, request.c_str(), pristine, logits, host, histories, 30, 1, true);
    std::printf("  -%-24s %8.4f ms/step  (the stage: %+8.4f ms)\n", keys[0], ms, every_ms - ms);
  }
  return 0;
}
