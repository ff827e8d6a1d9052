// Engine logprob entries -> the two OpenAI logprobs shapes.
#pragma once

#include <boost/json.hpp>
#include <string>

namespace aph::openai {

// Completions: {tokens, token_logprobs, top_logprobs:[{tok: lp}], text_offset},
// offsets relative to the returned text, continuing from `offset`.
inline boost::json::object completion_logprobs(const boost::json::array& entries, size_t& offset) {
  boost::json::array tokens, token_logprobs, top_logprobs, text_offset;
  for (const auto& value : entries) {
    if (!value.is_object()) continue;
    const auto& e = value.as_object();
    std::string token = e.contains("token") && e.at("token").is_string()
                            ? std::string(e.at("token").as_string())
                            : std::string();
    tokens.emplace_back(token);
    token_logprobs.push_back(e.contains("logprob") ? e.at("logprob") : boost::json::value(nullptr));
    boost::json::object top;
    if (e.contains("top") && e.at("top").is_array()) {
      for (const auto& t : e.at("top").as_array()) {
        if (!t.is_object() || !t.as_object().contains("token")) continue;
        const auto& to = t.as_object();
        if (!to.at("token").is_string()) continue;
        top[to.at("token").as_string()] = to.contains("logprob") ? to.at("logprob") : 0.0;
      }
    }
    top_logprobs.emplace_back(std::move(top));
    text_offset.emplace_back(offset);
    offset += token.size();
  }
  return boost::json::object{{"tokens", std::move(tokens)},
                             {"token_logprobs", std::move(token_logprobs)},
                             {"top_logprobs", std::move(top_logprobs)},
                             {"text_offset", std::move(text_offset)}};
}

// Chat: {content:[{token, logprob, bytes, top_logprobs:[{token, logprob, bytes}]}]}.
inline boost::json::object chat_logprobs(const boost::json::array& entries) {
  auto one = [](const boost::json::object& e) {
    boost::json::object out;
    out["token"] = e.contains("token") ? e.at("token") : boost::json::value("");
    out["logprob"] = e.contains("logprob") ? e.at("logprob") : boost::json::value(nullptr);
    out["bytes"] = e.contains("bytes") ? e.at("bytes") : boost::json::value(boost::json::array());
    return out;
  };
  boost::json::array content;
  for (const auto& value : entries) {
    if (!value.is_object()) continue;
    boost::json::object entry = one(value.as_object());
    boost::json::array top;
    const auto& e = value.as_object();
    if (e.contains("top") && e.at("top").is_array()) {
      for (const auto& t : e.at("top").as_array()) {
        if (t.is_object()) top.emplace_back(one(t.as_object()));
      }
    }
    entry["top_logprobs"] = std::move(top);
    content.emplace_back(std::move(entry));
  }
  return boost::json::object{{"content", std::move(content)}};
}

}  // namespace aph::openai
