// The engine end to end through aph_engine_api, on the fake model: outputs
// against an uncached reference, under concurrency and KV pressure, n > 1,
// stop conditions, logprobs, cancel, errors that fail one request only.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "core/common/error.hpp"
#include "core/engine/engine.hpp"
#include "fake_model.hpp"

using aph::engine::Engine;
using aph::engine::EngineConfig;
using aph::test::FakeRunner;
using aph::test::reference_continuation;

namespace {

struct ChoiceResult {
  std::string text;
  std::vector<int32_t> tokens;
  std::string finish_reason;
  std::string stop_reason;
  bool has_stop_reason = false;
  boost::json::array logprobs;
  uint64_t completion_tokens = 0;
};

struct Result {
  aph_status submit_status = APH_OK;
  std::string error;
  std::vector<ChoiceResult> choices;
  bool done = false;
  uint64_t prompt_tokens = 0;
  uint64_t cached_prompt_tokens = 0;
};

aph_error fresh_error() {
  aph_error e{};
  e.size = sizeof e;
  return e;
}

aph_request* submit(const aph_engine_api* api, const std::string& json, Result& r) {
  aph_error err = fresh_error();
  aph_request* req = nullptr;
  r.submit_status = api->submit(api->engine, json.c_str(), &req, &err);
  if (r.submit_status != APH_OK) r.error = err.message;
  return req;
}

void drain(const aph_engine_api* api, aph_request* req, Result& r) {
  for (int i = 0; i < 100000 && !r.done; ++i) {
    aph_gen_event ev{};
    ev.size = sizeof ev;
    aph_error err = fresh_error();
    ASSERT_EQ(api->next_event(req, 1000, &ev, &err), APH_OK);
    if (ev.kind == APH_EVENT_NONE) continue;
    if (ev.kind == APH_EVENT_DONE) {
      r.done = true;
      break;
    }
    if (ev.kind == APH_EVENT_ERROR) {
      r.error = err.message;
      continue;
    }
    if (r.choices.size() <= ev.choice) r.choices.resize(ev.choice + 1);
    ChoiceResult& c = r.choices[ev.choice];
    c.text.append(ev.text, ev.text_len);
    c.tokens.insert(c.tokens.end(), ev.token_ids, ev.token_ids + ev.n_tokens);
    c.completion_tokens = ev.completion_tokens;
    r.prompt_tokens = ev.prompt_tokens;
    r.cached_prompt_tokens = ev.cached_prompt_tokens;
    if (ev.logprobs_json) {
      const boost::json::value parsed = boost::json::parse(ev.logprobs_json);
      for (const auto& e : parsed.as_array()) c.logprobs.push_back(e);
    }
    if (ev.kind == APH_EVENT_FINISHED) {
      c.finish_reason = ev.finish_reason ? ev.finish_reason : "";
      if (ev.stop_reason) {
        c.stop_reason = ev.stop_reason;
        c.has_stop_reason = true;
      }
    }
  }
  api->release(req);
}

Result run(const aph_engine_api* api, const std::string& json) {
  Result r;
  aph_request* req = submit(api, json, r);
  if (req) drain(api, req, r);
  return r;
}

// test_engine_overlap runs every test again with steps overlapped.
bool overlap_from_env() {
  const char* v = std::getenv("APH_TEST_OVERLAP_DECODE");
  return v != nullptr && std::string(v) == "1";
}

struct Fixture {
  explicit Fixture(EngineConfig cfg = {}, int64_t max_model_len = 256) {
    if (overlap_from_env()) cfg.overlap_decode = true;
    auto r = std::make_unique<FakeRunner>(max_model_len);
    runner = r.get();
    if (cfg.served_model_name.empty()) cfg.served_model_name = "fake";
    // The fake model's blocks are tiny; keep the pool to a few thousand.
    if (cfg.cpu_kv_cache_bytes == EngineConfig{}.cpu_kv_cache_bytes)
      cfg.cpu_kv_cache_bytes = 256 << 10;
    engine = Engine::create_with_runner(cfg, std::move(r), registry);
    api = engine->api();
  }
  aph::PluginRegistry registry = aph::test::greedy_sampler_registry();
  FakeRunner* runner = nullptr;
  std::unique_ptr<Engine> engine;
  const aph_engine_api* api = nullptr;
};

std::vector<int32_t> prompt_ids(const std::string& text) {
  std::vector<int32_t> ids{0};
  auto t = aph::test::FakeTokenizer().encode(text, {});
  ids.insert(ids.end(), t.begin(), t.end());
  return ids;
}

std::string text_of(const std::vector<int32_t>& ids) {
  return aph::test::FakeTokenizer().decode(ids, true);
}

}  // namespace

TEST(Engine, GeneratesTheReferenceTokens) {
  Fixture f;
  Result r = run(f.api, R"({"prompt": "hello world", "max_tokens": 10})");
  ASSERT_TRUE(r.done) << r.error;
  ASSERT_EQ(r.choices.size(), 1u);
  const auto expected = reference_continuation(prompt_ids("hello world"), 10, true);
  EXPECT_EQ(r.choices[0].tokens, expected);
  EXPECT_EQ(r.choices[0].text, text_of(expected));
  EXPECT_EQ(r.choices[0].finish_reason, "length");
  EXPECT_EQ(r.prompt_tokens, 12u);
  EXPECT_EQ(r.choices[0].completion_tokens, 10u);
}

// overlap_decode: each decode step is queued before the previous step's
// token reaches the host, fed by the sampler's ids (the fake model derives
// its logits from the ids in its KV pool, so a placeholder left in place
// would change the tokens).
TEST(Engine, OverlappedDecodeStepsGiveTheReferenceTokens) {
  EngineConfig cfg;
  cfg.overlap_decode = true;
  Fixture f(cfg);
  Result r = run(f.api, R"({"prompt": "hello world", "max_tokens": 40, "ignore_eos": true})");
  ASSERT_TRUE(r.done) << r.error;
  EXPECT_EQ(r.choices[0].tokens, reference_continuation(prompt_ids("hello world"), 40, false));
  EXPECT_EQ(r.choices[0].finish_reason, "length");
  // The prefill step and the one it samples run plainly; later decode
  // steps were queued early, the last one (past max_tokens) dropped.
  EXPECT_GE(f.engine->stats().overlapped_steps, 35u);
  // A stop in the middle: the queued step's row is dropped, and the blocks
  // of the finished sequence come back.
  r = run(f.api, R"({"prompt": "!abc", "max_tokens": 40})");
  ASSERT_TRUE(r.done) << r.error;
  EXPECT_EQ(r.choices[0].tokens, reference_continuation(prompt_ids("!abc"), 40, true));
  EXPECT_EQ(r.choices[0].finish_reason, "stop");
  for (int i = 0; i < 100 && f.engine->stats().kv_usage > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(f.engine->stats().kv_usage, 0.0);
  // Four at once: steps of several decodes overlap too.
  std::vector<Result> results(4);
  std::vector<std::thread> clients;
  const std::string prompts[] = {"one", "two", "three", "four"};
  for (int i = 0; i < 4; ++i)
    clients.emplace_back([&, i] {
      results[i] = run(f.api, R"({"prompt": ")" + prompts[i] + R"(", "max_tokens": 30, "ignore_eos": true})");
    });
  for (auto& t : clients) t.join();
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(results[i].choices.at(0).tokens, reference_continuation(prompt_ids(prompts[i]), 30, false)) << i;
}

TEST(Engine, StepsAreNotOverlappedUnlessAskedFor) {
  if (overlap_from_env()) GTEST_SKIP() << "this run overlaps every engine";
  Fixture f;
  Result r = run(f.api, R"({"prompt": "hello world", "max_tokens": 20, "ignore_eos": true})");
  ASSERT_TRUE(r.done) << r.error;
  EXPECT_EQ(f.engine->stats().overlapped_steps, 0u);
}

TEST(Engine, MaxTokensDefaultsToTheRoomLeftInTheContext) {
  Fixture f({}, 40);
  Result r = run(f.api, R"({"prompt_token_ids": [0, 5, 6, 7]})");
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.choices[0].tokens.size(), 36u);
  EXPECT_EQ(r.choices[0].finish_reason, "length");
  // An explicit max_tokens beyond the context also ends at the context.
  r = run(f.api, R"({"prompt_token_ids": [0, 5, 6, 7], "max_tokens": 1000})");
  EXPECT_EQ(r.choices[0].tokens.size(), 36u);
}

TEST(Engine, ManyConcurrentRequestsUnderKvPressureAllFinishCorrectly) {
  EngineConfig cfg;
  cfg.block_size = 4;
  // 40 blocks of 4 tokens (160, above max_model_len 128) for 48 requests:
  // 16 running sequences need at least 64 blocks before they finish, so
  // preemption happens whichever requests the scheduler admits first (with
  // 70 blocks, 16 short ones could all fit and the test was timing-dependent).
  cfg.cpu_kv_cache_bytes = 4 * 4 * 40;
  cfg.max_num_seqs = 16;
  cfg.max_num_batched_tokens = 64;
  Fixture f(cfg, 128);
  // Everyone is queued before the first step ends, so the pool is contended.
  f.runner->close_gate();
  std::atomic<int> submitted{0};
  std::vector<std::thread> clients;
  std::vector<Result> results(48);
  std::vector<std::string> prompts;
  for (int i = 0; i < 48; ++i)
    prompts.push_back("req" + std::to_string(i) + std::string(i % 7, 'x'));
  for (int i = 0; i < 48; ++i) {
    clients.emplace_back([&, i] {
      Result& res = results[i];
      aph_request* req = submit(f.api,
                                R"({"prompt": ")" + prompts[i] + R"(", "max_tokens": )" +
                                    std::to_string(10 + i % 20) + "}",
                                res);
      ++submitted;
      if (req) drain(f.api, req, res);
    });
  }
  while (submitted.load() < 48) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  f.runner->open_gate();
  for (auto& t : clients) t.join();
  for (int i = 0; i < 48; ++i) {
    ASSERT_TRUE(results[i].done) << i << " " << results[i].error;
    EXPECT_EQ(results[i].choices[0].tokens,
              reference_continuation(prompt_ids(prompts[i]), 10 + i % 20, true))
        << "request " << i;
  }
  auto stats = f.engine->stats();
  EXPECT_GT(stats.preemptions, 0u);
  EXPECT_GT(f.runner->max_batch_seqs.load(), 1);
  EXPECT_EQ(stats.requests_finished, 48u);
  EXPECT_EQ(stats.time_to_first_token.count, 48u);
  EXPECT_EQ(stats.e2e_latency.count, 48u);
  EXPECT_GT(stats.inter_token_latency.count, 0u);
  EXPECT_EQ(stats.running, 0);
}

TEST(Engine, NChoicesShareThePromptAndEachFinish) {
  EngineConfig cfg;
  cfg.block_size = 4;
  Fixture f(cfg);
  Result r = run(f.api, R"({"prompt": "a shared prompt of some length", "max_tokens": 6, "n": 3})");
  ASSERT_TRUE(r.done) << r.error;
  ASSERT_EQ(r.choices.size(), 3u);
  const auto expected =
      reference_continuation(prompt_ids("a shared prompt of some length"), 6, true);
  for (const auto& c : r.choices) {
    EXPECT_EQ(c.tokens, expected);
    EXPECT_EQ(c.finish_reason, "length");
  }
}

TEST(Engine, StopStringIsTrimmedAndReported) {
  Fixture f;
  const auto expected = reference_continuation(prompt_ids("stop test"), 20, true);
  const std::string full = text_of(expected);
  const std::string stop = full.substr(5, 3);
  const size_t at = full.find(stop);
  Result r =
      run(f.api, R"({"prompt": "stop test", "max_tokens": 20, "stop": [")" + stop + R"("]})");
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.choices[0].text, full.substr(0, at));
  EXPECT_EQ(r.choices[0].finish_reason, "stop");
  EXPECT_EQ(r.choices[0].stop_reason, stop);
  r = run(f.api, R"({"prompt": "stop test", "max_tokens": 20, "stop": ")" + stop +
                     R"(", "include_stop_str_in_output": true})");
  EXPECT_EQ(r.choices[0].text, full.substr(0, at + stop.size()));
}

TEST(Engine, EosStopsUnlessIgnoredAndMinTokensHolds) {
  Fixture f;
  Result r =
      run(f.api, R"({"prompt": "!abc", "max_tokens": 50})");  // 5 prompt tokens; EOS at length 12
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.choices[0].finish_reason, "stop");
  EXPECT_FALSE(r.choices[0].has_stop_reason);
  EXPECT_EQ(r.choices[0].tokens.size(), 8u);
  EXPECT_EQ(r.choices[0].tokens.back(), 1);
  EXPECT_EQ(r.choices[0].text, text_of(std::vector<int32_t>(r.choices[0].tokens.begin(),
                                                            r.choices[0].tokens.end() - 1)));
  r = run(f.api, R"({"prompt": "!abc", "max_tokens": 15, "ignore_eos": true})");
  EXPECT_EQ(r.choices[0].tokens.size(), 15u);
  EXPECT_EQ(r.choices[0].finish_reason, "length");
  r = run(f.api, R"({"prompt": "!abc", "max_tokens": 15, "min_tokens": 10})");
  EXPECT_EQ(r.choices[0].tokens.size(), 11u);
  EXPECT_EQ(r.choices[0].finish_reason, "stop");
}

TEST(Engine, StopTokenIdsEndWithTheTokenAsReason) {
  Fixture f;
  const auto expected = reference_continuation(prompt_ids("token stop"), 20, true);
  const int32_t stop_token = expected[4];
  const auto first = std::find(expected.begin(), expected.end(), stop_token) - expected.begin();
  Result r = run(f.api, R"({"prompt": "token stop", "max_tokens": 20, "stop_token_ids": [)" +
                            std::to_string(stop_token) + "]}");
  EXPECT_EQ(r.choices[0].tokens.size(), static_cast<size_t>(first + 1));
  EXPECT_EQ(r.choices[0].stop_reason, std::to_string(stop_token));
}

TEST(Engine, LogprobsCarryTheChosenTokenAndTopN) {
  Fixture f;
  Result r = run(f.api, R"({"prompt": "lp", "max_tokens": 3, "logprobs": 2})");
  ASSERT_EQ(r.choices[0].logprobs.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const auto& e = r.choices[0].logprobs[i].as_object();
    EXPECT_EQ(e.at("id").as_int64(), r.choices[0].tokens[i]);
    EXPECT_EQ(e.at("token").as_string(), text_of({r.choices[0].tokens[i]}));
    EXPECT_EQ(e.at("top").as_array().size(), 2u);
    EXPECT_LE(e.at("logprob").to_number<double>(), 0.0);
  }
}

TEST(Engine, BadFieldsFailTheRequestNamingTheField) {
  Fixture f({}, 64);
  struct Case {
    const char* json;
    const char* field;
  } cases[] = {
      {R"({"prompt": "x", "max_tokens": "ten"})", "max_tokens"},
      {R"({"prompt": "x", "max_tokens": 0})", "max_tokens"},
      {R"({"prompt": "x", "n": 0})", "n"},
      {R"({"prompt": 5})", "prompt"},
      {R"({"max_tokens": 5})", "prompt"},
      {R"({"prompt_token_ids": [0, 99999]})", "prompt_token_ids[1]"},
      {R"({"prompt": "x", "stop": [1]})", "stop[0]"},
      {R"({"prompt": "x", "stop_token_ids": [-1]})", "stop_token_ids[0]"},
      {R"({"prompt": "x", "ignore_eos": "yes"})", "ignore_eos"},
      {R"({"prompt": "x", "lora": "nope"})", "lora"},
      {R"([1, 2])", "request"},
      {R"({"prompt": )", "request"},
  };
  for (const auto& c : cases) {
    Result r;
    EXPECT_EQ(submit(f.api, c.json, r), nullptr) << c.json;
    EXPECT_EQ(r.submit_status, APH_ERR_INVALID_ARGUMENT) << c.json;
    EXPECT_EQ(r.error.rfind(c.field, 0), 0u) << c.json << " -> " << r.error;
  }
  Result too_long;
  EXPECT_EQ(submit(f.api, R"({"prompt": ")" + std::string(80, 'a') + R"("})", too_long), nullptr);
  EXPECT_EQ(too_long.submit_status, APH_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(too_long.error.rfind("prompt", 0), 0u);
  // Unknown keys are ignored; the engine still serves.
  Result ok = run(f.api, R"({"prompt": "x", "max_tokens": 2, "some_future_key": {"a": 1}})");
  EXPECT_TRUE(ok.done);
  EXPECT_EQ(ok.choices[0].tokens.size(), 2u);
}

TEST(Engine, CancelFreesTheRequestWithinAStep) {
  Fixture f;
  Result r;
  // The engine is held inside its first step (the prefill) when the cancel lands.
  f.runner->close_gate();
  aph_request* req =
      submit(f.api, R"({"prompt": "long", "max_tokens": 200, "ignore_eos": true})", r);
  ASSERT_NE(req, nullptr);
  while (f.runner->waiting_at_gate.load() == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  f.api->cancel(req);
  f.runner->open_gate();
  aph_gen_event ev{};
  ev.size = sizeof ev;
  aph_error err = fresh_error();
  uint64_t tokens = 0;
  std::string finish;
  for (;;) {
    ASSERT_EQ(f.api->next_event(req, 1000, &ev, &err), APH_OK);
    ASSERT_NE(ev.kind, APH_EVENT_NONE) << "no end after cancel";
    tokens += ev.n_tokens;
    if (ev.kind == APH_EVENT_FINISHED) finish = ev.finish_reason;
    if (ev.kind == APH_EVENT_DONE) break;
  }
  f.api->release(req);
  EXPECT_EQ(finish, "abort");
  EXPECT_LE(tokens, 1u);  // the step in flight completes; no further step runs
  for (int i = 0; i < 100 && f.engine->stats().kv_usage > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(f.engine->stats().kv_usage, 0.0);
  EXPECT_EQ(f.engine->stats().running, 0);
}

TEST(Engine, FullQueueAnswersBusy) {
  EngineConfig cfg;
  cfg.max_waiting = 2;
  Fixture f(cfg);
  f.runner->close_gate();
  std::vector<aph_request*> held;
  aph_status last = APH_OK;
  for (int i = 0; i < 50 && last == APH_OK; ++i) {
    Result r;
    aph_request* req = submit(f.api, R"({"prompt": "q", "max_tokens": 2})", r);
    last = r.submit_status;
    if (req) held.push_back(req);
  }
  EXPECT_EQ(last, APH_ERR_BUSY);
  EXPECT_LE(held.size(), 4u);
  f.runner->open_gate();
  for (auto* req : held) {
    Result r;
    drain(f.api, req, r);
    EXPECT_TRUE(r.done);
  }
}

TEST(Engine, DeviceFaultFailsOnlyTheRequestsOfThatStep) {
  Fixture f;
  f.runner->fail_on_token = 63;  // '!'
  Result bad = run(f.api, R"({"prompt": "!boom", "max_tokens": 3})");
  EXPECT_TRUE(bad.done);
  EXPECT_NE(bad.error.find("fake device fault"), std::string::npos) << bad.error;
  Result good = run(f.api, R"({"prompt": "fine", "max_tokens": 3})");
  EXPECT_TRUE(good.done);
  EXPECT_EQ(good.choices[0].tokens, reference_continuation(prompt_ids("fine"), 3, true));
  EXPECT_EQ(f.engine->stats().kv_usage, 0.0);
  EXPECT_EQ(f.engine->stats().running, 0);
}

TEST(Engine, PrefixCacheHitsAreReportedAsCachedPromptTokens) {
  EngineConfig cfg;
  cfg.block_size = 4;
  Fixture f(cfg);
  const std::string prompt = "a long shared system prompt then a question";
  Result first = run(f.api, R"({"prompt": ")" + prompt + R"(", "max_tokens": 2})");
  Result second = run(f.api, R"({"prompt": ")" + prompt + R"(", "max_tokens": 2})");
  EXPECT_EQ(first.cached_prompt_tokens, 0u);
  EXPECT_EQ(second.cached_prompt_tokens, (prompt.size() + 1 - 1) / 4 * 4);
  EXPECT_EQ(first.choices[0].tokens, second.choices[0].tokens);
  EXPECT_GT(f.engine->stats().prefix_cache_hits, 0u);
}

TEST(Engine, TokenizeDetokenizeAndModelInfo) {
  Fixture f;
  aph_error err = fresh_error();
  aph_buffer buf{};
  ASSERT_EQ(f.api->tokenize(f.api->engine, "ab", 2, 1, 0, &buf, &err), APH_OK);
  ASSERT_EQ(buf.len, 12u);
  std::vector<int32_t> ids(static_cast<int32_t*>(buf.data), static_cast<int32_t*>(buf.data) + 3);
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 3, 4}));
  f.api->free_buffer(f.api->engine, &buf);
  ASSERT_EQ(f.api->detokenize(f.api->engine, ids.data(), ids.size(), 1, &buf, &err), APH_OK);
  EXPECT_EQ(std::string(static_cast<char*>(buf.data), buf.len), "ab");
  f.api->free_buffer(f.api->engine, &buf);
  int32_t bad = 500;
  EXPECT_EQ(f.api->detokenize(f.api->engine, &bad, 1, 1, &buf, &err), APH_ERR_INVALID_ARGUMENT);
  aph_model_desc desc{};
  desc.size = sizeof desc;
  ASSERT_EQ(f.api->model_info(f.api->engine, &desc, &err), APH_OK);
  EXPECT_STREQ(desc.served_model_name, "fake");
  EXPECT_EQ(desc.max_model_len, 256);
  EXPECT_EQ(desc.vocab_size, 64);
  EXPECT_EQ(desc.eos_token_id, 1);
  EXPECT_EQ(desc.ready, 1);
}

TEST(Engine, ChatTemplateRendersAndReportsErrors) {
  Fixture f;
  aph_error err = fresh_error();
  aph_buffer buf{};
  const char* messages =
      R"([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hel"}])";
  ASSERT_EQ(f.api->apply_chat_template(f.api->engine, messages,
                                       R"({"add_generation_prompt": false})", &buf, &err),
            APH_OK)
      << err.message;
  EXPECT_EQ(std::string(static_cast<char*>(buf.data), buf.len), "<user>hi<assistant>hel");
  f.api->free_buffer(f.api->engine, &buf);
  ASSERT_EQ(f.api->apply_chat_template(f.api->engine, R"([{"role": "user", "content": "hi"}])",
                                       R"({"add_generation_prompt": true})", &buf, &err),
            APH_OK);
  EXPECT_EQ(std::string(static_cast<char*>(buf.data), buf.len), "<user>hi<assistant>");
  f.api->free_buffer(f.api->engine, &buf);
  ASSERT_EQ(
      f.api->apply_chat_template(
          f.api->engine, messages,
          R"({"continue_final_message": true, "chat_template": "{% for m in messages %}[{{ m.content }}]{% endfor %}"})",
          &buf, &err),
      APH_OK);
  EXPECT_EQ(std::string(static_cast<char*>(buf.data), buf.len), "[hi][hel");
  f.api->free_buffer(f.api->engine, &buf);
  EXPECT_EQ(
      f.api->apply_chat_template(f.api->engine, messages,
                                 R"({"chat_template": "{{ raise_exception('no') }}"})", &buf, &err),
      APH_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(f.api->apply_chat_template(f.api->engine, R"({"not": "a list"})", "{}", &buf, &err),
            APH_ERR_INVALID_ARGUMENT);
}

TEST(Engine, ShutdownEndsOpenRequests) {
  Fixture f;
  Result r;
  aph_request* req = submit(f.api, R"({"prompt": "x", "max_tokens": 200, "ignore_eos": true})", r);
  ASSERT_NE(req, nullptr);
  f.engine->shutdown();
  drain(f.api, req, r);
  EXPECT_TRUE(r.done);
  Result after;
  EXPECT_EQ(submit(f.api, R"({"prompt": "x"})", after), nullptr);
  EXPECT_NE(after.submit_status, APH_OK);
}
