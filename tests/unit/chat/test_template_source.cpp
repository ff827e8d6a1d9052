// Where templates come from: --chat-template (file or inline) and
// tokenizer_config.json's chat_template (string or named list).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/chat/template_source.hpp"
#include "core/common/error.hpp"

using namespace aph::chat;

namespace {

boost::json::object config(const std::string& json) { return boost::json::parse(json).as_object(); }

}  // namespace

TEST(ChatTemplateSource, ArgumentIsAFileWhenOneExists) {
  auto dir = std::filesystem::temp_directory_path() / ("aph_chat_src_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = dir / "t.jinja";
  std::ofstream(path) << "{{ 'from file' }}";
  EXPECT_EQ(resolve_chat_template_argument(path.string()), "{{ 'from file' }}");
  EXPECT_EQ(resolve_chat_template_argument("{{ inline }}"), "{{ inline }}");
  EXPECT_EQ(resolve_chat_template_argument((dir / "missing.jinja").string()), (dir / "missing.jinja").string());
  std::ofstream(dir / "tokenizer_config.json") << R"({"chat_template": "from config"})";
  EXPECT_EQ(chat_template_from_model_dir(dir.string(), false).value(), "from config");
  std::ofstream(dir / "chat_template.jinja") << "from jinja file";
  EXPECT_EQ(chat_template_from_model_dir(dir.string(), false).value(), "from jinja file");
  std::filesystem::remove_all(dir);
}

TEST(ChatTemplateSource, TokenizerConfigStringOrNamedList) {
  EXPECT_EQ(chat_template_from_tokenizer_config(config(R"({"chat_template": "T"})"), false).value(), "T");
  EXPECT_FALSE(chat_template_from_tokenizer_config(config(R"({"bos_token": "<s>"})"), false).has_value());
  auto list = config(R"({"chat_template": [{"name": "rag", "template": "R"}, {"name": "default", "template": "D"},
                                          {"name": "tool_use", "template": "U"}]})");
  EXPECT_EQ(chat_template_from_tokenizer_config(list, false).value(), "D");
  EXPECT_EQ(chat_template_from_tokenizer_config(list, true).value(), "U");
  EXPECT_EQ(chat_template_from_tokenizer_config(list, false, "rag").value(), "R");
  EXPECT_THROW(chat_template_from_tokenizer_config(list, false, "nope"), aph::Error);
  auto no_default = config(R"({"chat_template": [{"name": "first", "template": "F"}]})");
  EXPECT_EQ(chat_template_from_tokenizer_config(no_default, true).value(), "F");
  EXPECT_THROW(chat_template_from_tokenizer_config(config(R"({"chat_template": 3})"), false), aph::Error);
  EXPECT_THROW(chat_template_from_tokenizer_config(config(R"({"chat_template": [{"name": 1}]})"), false), aph::Error);
}

TEST(ChatTemplateSource, GgufMetadata) {
  auto md = config(R"({"tokenizer.chat_template": "D", "tokenizer.chat_template.tool_use": "U"})");
  EXPECT_EQ(chat_template_from_gguf_metadata(md, false).value(), "D");
  EXPECT_EQ(chat_template_from_gguf_metadata(md, true).value(), "U");
  EXPECT_EQ(chat_template_from_gguf_metadata(md, false, "tool_use").value(), "U");
  EXPECT_THROW(chat_template_from_gguf_metadata(md, false, "rag"), aph::Error);
  EXPECT_FALSE(chat_template_from_gguf_metadata(config("{}"), false).has_value());
  EXPECT_THROW(chat_template_from_gguf_metadata(config(R"({"tokenizer.chat_template": 1})"), false), aph::Error);
}
