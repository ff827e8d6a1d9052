// `aphrodited generate --model PATH --prompt TEXT [--max-tokens N]
//   [--device cpu|cuda] [--temperature T] [--seed S] [--chat]`
//
// Runs one prompt through the model runner without the engine and prints the
// continuation as it is produced; the last line gives prompt and generation
// speed. Greedy at temperature 0 (the default); above 0 a seeded softmax
// draw (the full sampler chain belongs to the engine). --chat wraps the
// prompt as one user message in the model's chat template.
//
// Built only when the model library is (core/model needs core/attention and
// core/text): APH_HAVE_MODEL comes with aph_model.
#ifdef APH_HAVE_MODEL

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/chat/chat_template.hpp"
#include "core/common/error.hpp"
#include "core/model/model_runner.hpp"
#include "core/model/sequence.hpp"
#include "core/text/incremental_detokenizer.hpp"
#include "core/common/device_choice.hpp"
#include "server/subcommands.hpp"

namespace aph::server {
namespace {

struct GenerateArgs {
  std::string prompt;
  int64_t max_tokens = 128;
  double temperature = 0.0;
  uint64_t seed = 0;
  bool chat = false;
};

GenerateArgs parse_args(const std::vector<std::string>& rest) {
  GenerateArgs a;
  bool have_prompt = false;
  for (size_t i = 0; i < rest.size(); ++i) {
    const std::string& f = rest[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= rest.size()) throw invalid_argument(f + " needs a value");
      return rest[++i];
    };
    try {
      if (f == "--prompt") {
        a.prompt = value();
        have_prompt = true;
      } else if (f == "--max-tokens") {
        a.max_tokens = std::stoll(value());
        if (a.max_tokens <= 0) throw invalid_argument("--max-tokens must be positive");
      } else if (f == "--temperature") {
        a.temperature = std::stod(value());
        if (!(a.temperature >= 0)) throw invalid_argument("--temperature must be >= 0");
      } else if (f == "--seed") {
        a.seed = std::stoull(value());
      } else if (f == "--chat") {
        a.chat = true;
      } else {
        throw invalid_argument("generate: unknown argument " + f);
      }
    } catch (const std::logic_error&) {
      throw invalid_argument(f + ": not a number: " + rest[i]);
    }
  }
  if (!have_prompt) throw invalid_argument("generate needs --prompt TEXT");
  return a;
}

int32_t sample(const std::vector<float>& logits, double temperature, std::mt19937_64& rng) {
  if (temperature == 0) return model::argmax(logits.data(), static_cast<int64_t>(logits.size()));
  const float top = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  for (size_t i = 0; i < p.size(); ++i) p[i] = std::exp((logits[i] - top) / temperature);
  std::discrete_distribution<int32_t> pick(p.begin(), p.end());
  return pick(rng);
}

int run_generate(const std::vector<std::string>& args) {
  SubcommandSetup setup = prepare_subcommand(args);
  GenerateArgs a = parse_args(setup.rest);
  const auto& eng = setup.config.engine;
  if (eng.model_path.empty()) throw invalid_argument("generate needs --model PATH");

  model::LoadOptions opts;
  opts.path = eng.model_path;
  opts.quantization = eng.quantization;
  opts.dtype = eng.dtype;
  opts.device = resolve_device(eng.device);
  opts.max_model_len = eng.max_model_len;
  opts.cpu_threads = eng.cpu_threads;
  auto runner = model::ModelRunner::load(opts, setup.plugins->registry());
  const text::Tokenizer& tok = runner->tokenizer();

  std::string text = a.prompt;
  bool add_special = true;
  if (a.chat) {
    const std::string& source = runner->info().chat_template;
    if (source.empty()) throw invalid_argument("--chat: the model has no chat template");
    auto tmpl = chat::ChatTemplate::compile(source);
    boost::json::object vars;
    vars["messages"] = boost::json::array{boost::json::object{{"role", "user"}, {"content", a.prompt}}};
    vars["add_generation_prompt"] = true;
    vars["bos_token"] = runner->info().bos_token;
    vars["eos_token"] = runner->info().eos_token;
    text = tmpl->render(vars);
    add_special = false;  // the template writes its own BOS
  }
  std::vector<int32_t> prompt = tok.encode(text, text::EncodeOptions{add_special, a.chat});
  if (prompt.empty()) throw invalid_argument("--prompt encodes to no tokens");

  const int64_t capacity = std::min<int64_t>(runner->info().max_model_len, static_cast<int64_t>(prompt.size()) + a.max_tokens);
  if (static_cast<int64_t>(prompt.size()) >= capacity) {
    throw invalid_argument("the prompt (" + std::to_string(prompt.size()) + " tokens) fills the model's context");
  }
  model::SingleSequence seq(*runner, capacity);
  if (runner->device() != APH_DEVICE_CPU) runner->capture_decode_graphs({1}, static_cast<int>((capacity + 15) / 16));
  const std::vector<int32_t> stops = tok.eog_ids();
  std::mt19937_64 rng(a.seed);
  text::IncrementalDetokenizer detok(tok, text::DetokenizeOptions{}, prompt);

  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  std::vector<float> logits = seq.append(prompt);
  const auto t1 = clock::now();
  int64_t generated = 0, decode_steps = 0;
  while (true) {
    const int32_t next = sample(logits, a.temperature, rng);
    ++generated;
    if (std::find(stops.begin(), stops.end(), next) != stops.end()) break;
    std::fputs(detok.push(next).c_str(), stdout);
    std::fflush(stdout);
    if (generated >= a.max_tokens || seq.length() >= seq.capacity()) break;
    logits = seq.append({next});
    ++decode_steps;
  }
  std::fputs(detok.flush().c_str(), stdout);
  const auto t2 = clock::now();
  const double prefill_s = std::chrono::duration<double>(t1 - t0).count();
  const double decode_s = std::chrono::duration<double>(t2 - t1).count();
  // The first generated token comes from the prefill's logits; decode speed
  // counts the steps that ran the model on one new token.
  std::printf("\nprompt: %zu tokens, %.1f tokens/s; generated: %lld tokens, %.1f tokens/s\n", prompt.size(),
              prompt.size() / std::max(prefill_s, 1e-9), static_cast<long long>(generated),
              decode_steps / std::max(decode_s, 1e-9));
  return 0;
}

}  // namespace

APH_SUBCOMMAND(generate, "generate", "generate text from a prompt with the model runner (no engine)", run_generate);

}  // namespace aph::server

#endif  // APH_HAVE_MODEL
