// aph_bench_engine: the serving engine in-process (no HTTP) on one model.
//
//   aph_bench_engine --ceilings
//   aph_bench_engine --model PATH --label NAME [--kv-cache-dtype fp16]
//       [--cases decode512,prefill512,ctx8k,batch8,batch32,batch64,batch128]
//       [--copy-gbps X] [--bf16-tflops Y] [--weight-read-bytes N] [--matmul-params N]
//       [--plugins DIR] [--max-model-len N] [--sampling JSON]
//       [--overlap-decode 0|1] (engine.overlap_decode, default 1 as in the daemon; also APH_OVERLAP_DECODE)
//
// --sampling: sampler fields added to every request (default greedy), e.g. the
// full chain, to price it against greedy decode.
//
// Prints one "RESULT<TAB>label<TAB>case<TAB>tokens/s<TAB>utilization" line per
// case (bench/run.sh joins them with the targets into one table). Decode
// rates count tokens after every request has its first token; prefill is the
// prompt length over the time to first token.
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ceilings.hpp"
#include "core/common/error.hpp"
#include "core/common/log.hpp"
#include "core/engine/engine.hpp"
#include "core/model/model_runner.hpp"
#include "server/plugin_loader.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::map<std::string, std::string> kv;
  std::string get(const std::string& k, const std::string& fallback = "") const {
    auto it = kv.find(k);
    return it == kv.end() ? fallback : it->second;
  }
  double num(const std::string& k, double fallback = 0) const {
    auto it = kv.find(k);
    return it == kv.end() ? fallback : std::stod(it->second);
  }
};

struct RequestTrace {
  Clock::time_point submitted;
  std::vector<std::pair<Clock::time_point, uint32_t>> token_events;  // arrival, tokens
  std::string error;
  std::string finish_reason;
  // FNV-1a over the generated ids: two builds or settings that should
  // compute the same greedy tokens can be compared from the logs.
  uint64_t ids_fnv = 14695981039346656037ull;
  uint64_t ids = 0;
};

std::vector<int32_t> random_prompt(int n, uint32_t seed, int64_t vocab) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(n);
  // Ordinary ids only: skip the low ids and the specials at the vocabulary's end.
  const int64_t lo = vocab > 4000 ? 1000 : 0;
  const int64_t span = std::max<int64_t>(vocab - 2 * lo - 2, 1);
  for (auto& id : ids) id = static_cast<int32_t>(lo + rng() % static_cast<uint64_t>(span));
  return ids;
}

std::string request_json(const std::vector<int32_t>& prompt, int max_tokens, const boost::json::object& sampling) {
  boost::json::object o;
  boost::json::array ids;
  for (int32_t id : prompt) ids.push_back(id);
  o["prompt_token_ids"] = std::move(ids);
  o["max_tokens"] = max_tokens;
  o["ignore_eos"] = true;
  o["temperature"] = 0.0;
  for (const auto& field : sampling) o[field.key()] = field.value();
  return boost::json::serialize(o);
}

// Runs the prompts concurrently (one reader thread each) and returns their traces.
std::vector<RequestTrace> run_batch(const aph_engine_api* api,
                                    const std::vector<std::vector<int32_t>>& prompts,
                                    int max_tokens, const boost::json::object& sampling) {
  std::vector<RequestTrace> traces(prompts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < prompts.size(); ++i) {
    threads.emplace_back([&, i] {
      RequestTrace& t = traces[i];
      const std::string json = request_json(prompts[i], max_tokens, sampling);
      aph_error err{};
      err.size = sizeof err;
      aph_request* req = nullptr;
      t.submitted = Clock::now();
      if (api->submit(api->engine, json.c_str(), &req, &err) != APH_OK) {
        t.error = err.message;
        return;
      }
      for (;;) {
        aph_gen_event ev{};
        ev.size = sizeof ev;
        if (api->next_event(req, 60000, &ev, &err) != APH_OK) {
          t.error = err.message;
          break;
        }
        const auto now = Clock::now();
        if (ev.kind == APH_EVENT_NONE) {
          t.error = "no event for 60 s";
          break;
        }
        if (ev.kind == APH_EVENT_ERROR) t.error = err.message;
        if (ev.kind == APH_EVENT_TOKENS && ev.n_tokens > 0) {
          t.token_events.emplace_back(now, ev.n_tokens);
          for (uint32_t j = 0; ev.token_ids && j < ev.n_tokens; ++j) {
            t.ids_fnv = (t.ids_fnv ^ static_cast<uint32_t>(ev.token_ids[j])) * 1099511628211ull;
            ++t.ids;
          }
        }
        if (ev.kind == APH_EVENT_FINISHED && ev.finish_reason) t.finish_reason = ev.finish_reason;
        if (ev.kind == APH_EVENT_DONE) break;
      }
      api->release(req);
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& t : traces)
    if (!t.error.empty()) throw aph::Error(APH_ERR_INTERNAL, "bench request failed: " + t.error);
  return traces;
}

// Tokens per second once every request is decoding.
double decode_rate(const std::vector<RequestTrace>& traces) {
  Clock::time_point t0 = traces[0].token_events.front().first;
  Clock::time_point t_end = t0;
  for (const auto& t : traces) {
    t0 = std::max(t0, t.token_events.front().first);
    t_end = std::max(t_end, t.token_events.back().first);
  }
  uint64_t tokens = 0;
  for (const auto& t : traces)
    for (const auto& [when, n] : t.token_events)
      if (when > t0) tokens += n;
  const double s = std::chrono::duration<double>(t_end - t0).count();
  return s > 0 ? tokens / s : 0;
}

std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100 * x);
  return buf;
}

void result(const std::string& label, const std::string& name, double tok_s,
            const std::string& util) {
  std::printf("RESULT\t%s\t%s\t%.1f\t%s\n", label.c_str(), name.c_str(), tok_s, util.c_str());
  std::fflush(stdout);
}

int run_model(const Args& args) {
  const std::string label = args.get("label", "model");
  aph::server::PluginLoadOptions plugin_options;
  plugin_options.dirs = {args.get("plugins", "build/plugins")};
  aph::server::PluginLoader plugins(plugin_options);
  plugins.load_all();

  aph::engine::EngineConfig cfg;
  cfg.model_path = args.get("model");
  cfg.served_model_name = label;
  cfg.device = args.get("device", "auto");
  cfg.kv_cache_dtype = args.get("kv-cache-dtype", "auto");
  cfg.max_model_len = static_cast<int64_t>(args.num("max-model-len", 8192));
  cfg.max_num_seqs = 128;
  cfg.max_num_batched_tokens = 8192;
  cfg.max_waiting = 4096;
  cfg.enable_prefix_caching = false;  // every case must compute its prompt
  cfg.enforce_eager = args.get("enforce-eager", "0") == "1";
  // On by default, as in the daemon; APH_OVERLAP_DECODE=0 turns it off too,
  // so device-run.sh's AB_ENV can compare.
  const char* overlap_env = std::getenv("APH_OVERLAP_DECODE");
  cfg.overlap_decode = args.get("overlap-decode", overlap_env ? overlap_env : "1") == "1";
  cfg.gpu_memory_utilization = args.num("gpu-memory-utilization", 0.9);
  // An explicit KV pool in bytes (0: from the utilization); ncu's kernel
  // replay backs up every allocation, so a profile wants a small one.
  cfg.kv_cache_memory = static_cast<int64_t>(args.num("kv-cache-memory", 0));

  aph::model::LoadOptions lo;
  lo.path = cfg.model_path;
  lo.device = cfg.device == "cpu" ? APH_DEVICE_CPU : 0;
  lo.max_model_len = cfg.max_model_len;
  const auto t_load = Clock::now();
  auto runner = aph::model::ModelRunner::load(lo, plugins.registry());
  const aph::model::ModelInfo info = runner->info();
  auto engine = aph::engine::Engine::create_with_runner(cfg, std::move(runner), plugins.registry());
  std::fprintf(stderr, "[%s] loaded in %.1f s\n", label.c_str(),
               std::chrono::duration<double>(Clock::now() - t_load).count());
  const aph_engine_api* api = engine->api();

  const double copy_bw = args.num("copy-gbps") * 1e9;
  const double mm_rate = args.num("bf16-tflops") * 1e12;
  const double weight_bytes = args.num("weight-read-bytes");
  const double matmul_params = args.num("matmul-params");
  const std::string kv = cfg.kv_cache_dtype;
  const double kv_elem =
      (kv.rfind("fp8", 0) == 0) ? 1 : (info.act_dtype == APH_DTYPE_F32 && kv == "auto" ? 4 : 2);
  const double kv_bytes_per_ctx_token =
      2.0 * info.num_layers * info.num_kv_heads * info.head_dim * kv_elem;
  auto bw_util = [&](double tok_s, double seqs, double avg_ctx) {
    if (copy_bw <= 0 || weight_bytes <= 0) return std::string("-");
    const double bytes_per_step = weight_bytes + seqs * avg_ctx * kv_bytes_per_ctx_token;
    return percent(tok_s / seqs * bytes_per_step / copy_bw) + " bw";
  };
  auto mm_util = [&](double tok_s) {
    if (mm_rate <= 0 || matmul_params <= 0) return std::string("-");
    return percent(tok_s * 2 * matmul_params / mm_rate) + " mm";
  };

  std::printf("NOTE\t%s: %lld KV blocks, %.0f KV bytes per token (%s)\n", label.c_str(),
              static_cast<long long>(engine->stats().num_kv_blocks), kv_bytes_per_ctx_token,
              kv.c_str());

  // Warm-up: first-use allocations and kernel selection stay out of the figures.
  const std::string sampling_text = args.get("sampling", "{}");
  const boost::json::value sampling_value = boost::json::parse(sampling_text);
  if (!sampling_value.is_object()) throw aph::invalid_argument("--sampling: expected a JSON object");
  const boost::json::object& sampling = sampling_value.as_object();
  run_batch(api, {random_prompt(64, 1, info.vocab_size)}, 8, sampling);

  std::stringstream cases(
      args.get("cases", "decode512,prefill512,ctx8k,batch8,batch32,batch64,batch128"));
  std::string name;
  uint32_t seed = 100;
  while (std::getline(cases, name, ',')) {
    if (name == "decode512" || name == "ctx8k") {
      const int prompt = name == "ctx8k" ? static_cast<int>(cfg.max_model_len) - 256 - 8 : 512;
      auto traces = run_batch(api, {random_prompt(prompt, seed++, info.vocab_size)}, 256, sampling);
      const double r = decode_rate(traces);
      std::fprintf(stderr, "[%s] %s: greedy ids FNV-1a %016llx over %llu tokens\n", label.c_str(), name.c_str(),
                   static_cast<unsigned long long>(traces[0].ids_fnv), static_cast<unsigned long long>(traces[0].ids));
      result(label, name, r, bw_util(r, 1, prompt + 128));
    } else if (name == "prefill512") {
      double best = 0;
      for (int i = 0; i < 3; ++i) {
        auto traces = run_batch(api, {random_prompt(512, seed++, info.vocab_size)}, 1, sampling);
        const double s = std::chrono::duration<double>(traces[0].token_events.front().first -
                                                       traces[0].submitted)
                             .count();
        best = std::max(best, 512 / s);
      }
      result(label, name, best, mm_util(best));
    } else if (name.rfind("batch", 0) == 0) {
      const int n = std::stoi(name.substr(5));
      std::vector<std::vector<int32_t>> prompts;
      for (int i = 0; i < n; ++i) prompts.push_back(random_prompt(256, seed++, info.vocab_size));
      auto traces = run_batch(api, prompts, 128, sampling);
      const double r = decode_rate(traces);
      result(label, name, r, bw_util(r, n, 256 + 64) + ", " + mm_util(r));
    } else {
      throw aph::invalid_argument("--cases: unknown case " + name);
    }
  }
  auto stats = engine->stats();
  std::fprintf(stderr, "[%s] kv blocks %lld, preemptions %llu\n", label.c_str(),
               static_cast<long long>(stats.num_kv_blocks),
               static_cast<unsigned long long>(stats.preemptions));
  engine->shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      std::fprintf(stderr, "unexpected argument %s\n", a.c_str());
      return 2;
    }
    a = a.substr(2);
    if (a == "ceilings") {
      args.kv[a] = "1";
    } else if (i + 1 < argc) {
      args.kv[a] = argv[++i];
    } else {
      std::fprintf(stderr, "--%s needs a value\n", a.c_str());
      return 2;
    }
  }
  try {
    aph::set_log_level(args.get("log-level", "warn"));
    if (args.kv.count("ceilings")) {
      auto c = aph::bench::measure_ceilings();
      std::printf("CEILING\tcopy_gbps\t%.1f\nCEILING\tbf16_tflops\t%.1f\n",
                  c.copy_bytes_per_s / 1e9, c.bf16_flops / 1e12);
      return 0;
    }
    if (args.get("model").empty()) {
      std::fprintf(stderr,
                   "usage: aph_bench_engine --ceilings | --model PATH --label NAME [...]\n");
      return 2;
    }
    return run_model(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "aph_bench_engine: %s\n", e.what());
    return 1;
  }
}
