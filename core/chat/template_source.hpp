// Where a model's chat template comes from: --chat-template (a file or inline
// Jinja), a model directory (chat_template.jinja, tokenizer_config.json), or
// the chat_template field of tokenizer_config.json, which is a string or a
// list of {name, template}.
#pragma once

#include <boost/json.hpp>
#include <optional>
#include <string>

namespace aph::chat {

// The text of a --chat-template value: the contents of the file it names when
// such a file exists, otherwise the value itself as inline Jinja.
std::string resolve_chat_template_argument(const std::string& value);

// Picks the template from tokenizer_config.json's "chat_template":
// `name` when given; else "tool_use" when the request has tools and it
// exists; else "default"; else the first. nullopt when there is none.
// Throws aph::Error when the field has another shape or `name` is missing.
std::optional<std::string> chat_template_from_tokenizer_config(const boost::json::object& config, bool has_tools,
                                                               const std::string& name = "");

// From GGUF metadata (as JSON): "tokenizer.chat_template", or the named
// variants llama.cpp writes as "tokenizer.chat_template.<name>" (tool_use).
// Same choice rules as tokenizer_config.json.
std::optional<std::string> chat_template_from_gguf_metadata(const boost::json::object& metadata, bool has_tools,
                                                            const std::string& name = "");

// Looks in a model directory: chat_template.jinja first (newer HF layout),
// then tokenizer_config.json. nullopt when neither has one.
std::optional<std::string> chat_template_from_model_dir(const std::string& dir, bool has_tools,
                                                        const std::string& name = "");

}  // namespace aph::chat
