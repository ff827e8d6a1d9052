// Request validation: types, ranges, aliases and client quirks; errors name
// the field the client sent.
#include <gtest/gtest.h>

#include "core/common/error.hpp"
#include "tests/unit/samplers/chain_harness.hpp"

namespace aph::test {
namespace {

std::string error_of(ChainHarness& h, const std::string& json) {
  try {
    h.prepare(json);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), APH_ERR_INVALID_ARGUMENT) << e.what();
    return e.what();
  }
  return "";
}

TEST(ChainFields, BadValuesNameTheField) {
  ChainHarness h(100);
  EXPECT_EQ(error_of(h, R"({"top_p": 2})").rfind("top_p:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"top_p": 0})").rfind("top_p:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"min_p": "high"})").rfind("min_p:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"top_k": -2})").rfind("top_k:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"top_k": 1.5})").rfind("top_k:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"rep_pen": 0.5})").rfind("rep_pen (repetition_penalty):", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"temperature": -1})").rfind("temperature:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"dry_multiplier": 1, "dry_base": 1})").rfind("dry_base:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"mirostat_mode": 3})").rfind("mirostat_mode:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"logit_bias": {"abc": 1}})").rfind("logit_bias:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"logit_bias": {"100": 1}})").rfind("logit_bias:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"custom_token_bans": "1,x"})").rfind("custom_token_bans:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"allowed_token_ids": [1, -3]})").rfind("allowed_token_ids:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"logprobs": 50})").rfind("logprobs:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"xtc_probability": 1.5})").rfind("xtc_probability:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"dry_sequence_breakers": 5})").rfind("dry_sequence_breakers:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"sampler_priority": ["min_p", "nonsense"]})").rfind("sampler_priority:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"sampler_order": [6, 0, 99]})").rfind("sampler_order:", 0), 0u);
  // Numbers past int64 or with a fraction are field errors, not a Boost.JSON
  // exception escaping (found by fuzz_sampler_request).
  EXPECT_EQ(error_of(h, R"({"kobold_sampler_order": [6, 0, 18446744073709551615]})").rfind("kobold_sampler_order:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"logprobs": 18446744073709551615})").rfind("logprobs:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"logit_bias": [[1.5, 2]]})").rfind("logit_bias:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"logit_bias": [[18446744073709551615, 2]]})").rfind("logit_bias:", 0), 0u);
  EXPECT_EQ(error_of(h, R"({"allowed_token_ids": [1, 18446744073709551615]})").rfind("allowed_token_ids:", 0), 0u);
}

TEST(ChainFields, SillyTavernDefaultBodyIsAccepted) {
  ChainHarness h(100);
  const char* body = R"({"prompt":"x","model":"m","max_new_tokens":300,"max_tokens":300,"temperature":0.7,
    "top_p":0.5,"typical_p":1,"typical":1,"sampler_seed":-1,"min_p":0,"repetition_penalty":1.2,
    "frequency_penalty":0,"presence_penalty":0,"top_k":40,"skew":0,"min_tokens":0,"add_bos_token":true,
    "smoothing_factor":0,"smoothing_curve":1,"dry_allowed_length":2,"dry_multiplier":0.8,"dry_base":1.75,
    "dry_sequence_breakers":"[\"\\n\", \":\", \"\\\"\", \"*\"]","dry_penalty_last_n":0,"max_tokens_second":0,
    "stopping_strings":["<|eot_id|>"],"stop":["<|eot_id|>"],"truncation_length":8192,"ban_eos_token":false,
    "skip_special_tokens":true,"top_a":0,"tfs":1,"mirostat_mode":0,"mirostat_tau":5,"mirostat_eta":0.1,
    "custom_token_bans":[],"banned_strings":[],"api_type":"aphrodite","api_server":"http://127.0.0.1:2242",
    "legacy_api":false,"xtc_threshold":0.1,"xtc_probability":0,"n":1,"temperature_last":true,"eta_cutoff":0,
    "epsilon_cutoff":0,"ignore_eos":false,"spaces_between_special_tokens":true,"guided_grammar":"",
    "guided_json":{},"early_stopping":false,"include_stop_str_in_output":false,"stream":true,
    "nsigma":0,"top_n_sigma":0,"no_repeat_ngram_size":0})";
  auto r = h.prepare(body);
  EXPECT_EQ(r->logprobs(), -1);
  // sampler_seed -1 means a fresh random seed per request.
  EXPECT_NE(h.prepare(body)->seed(), r->seed());
}

TEST(ChainFields, KoboldLiteBodyIsAccepted) {
  ChainHarness h(100);
  const char* body = R"({"n":1,"max_context_length":12288,"max_length":1536,"rep_pen":1.05,"temperature":0.75,
    "top_p":0.92,"top_k":100,"top_a":0,"typical":1,"tfs":1,"rep_pen_range":360,"rep_pen_slope":0.7,
    "sampler_order":[6,0,1,3,4,2,5],"memory":"","trim_stop":true,"genkey":"KCPP4821","min_p":0,
    "dynatemp_range":0,"dynatemp_exponent":1,"smoothing_factor":0,"smoothing_curve":1,"nsigma":0,
    "banned_tokens":[],"render_special":false,"logprobs":false,"presence_penalty":0,"logit_bias":{},
    "stop_sequence":["\nUser:"],"use_default_badwordsids":false,"bypass_eos":false,"prompt":"x",
    "sampler_seed": 77})";
  auto r = h.prepare(body);
  EXPECT_EQ(r->seed(), 77u);
  EXPECT_EQ(r->logprobs(), -1);
}

TEST(ChainFields, NullMeansAbsentAndSeedsAreKept) {
  ChainHarness h(100);
  EXPECT_EQ(h.prepare(R"({"seed": 5, "top_p": null, "min_p": null})")->seed(), 5u);
  EXPECT_EQ(h.prepare(R"({"seed": null, "sampler_seed": 8})")->seed(), 8u);
  EXPECT_EQ(h.prepare(R"({"seed": 9, "sampler_seed": 8})")->seed(), 9u);  // canonical wins
}

}  // namespace
}  // namespace aph::test
