// Errors: syntax errors name line and column; runtime errors fail the render
// with aph::Error; hostile templates hit depth, size and step limits instead
// of crashing.
#include <gtest/gtest.h>

#include <string>

#include "core/chat/chat_template.hpp"
#include "core/common/error.hpp"
#include "tests/unit/chat/render_helper.hpp"

using aph::chat::testing::render;

namespace {

std::string error_of(const std::string& source, const std::string& ctx = "{}") {
  try {
    render(source, ctx);
  } catch (const aph::Error& e) {
    EXPECT_EQ(e.code(), APH_ERR_INVALID_ARGUMENT);
    return e.what();
  }
  ADD_FAILURE() << "expected an error for: " << source;
  return "";
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST(ChatErrors, SyntaxErrorsNameLineAndColumn) {
  std::string e = error_of("line one\n{% if x %}\n  {{ 1 + }}\n{% endif %}");
  EXPECT_TRUE(contains(e, "line 3, column 10")) << e;
  e = error_of("{% for x in y %}no end");
  EXPECT_TRUE(contains(e, "line 1")) << e;
  EXPECT_TRUE(contains(e, "endfor")) << e;
  e = error_of("ok\n\n   {% frobnicate %}");
  EXPECT_TRUE(contains(e, "line 3, column 7")) << e;
  EXPECT_TRUE(contains(e, "unknown tag 'frobnicate'")) << e;
  e = error_of("{{ 'unterminated }}");
  EXPECT_TRUE(contains(e, "unterminated string")) << e;
  e = error_of("{# never closed");
  EXPECT_TRUE(contains(e, "comment")) << e;
  e = error_of("{{ x");
  EXPECT_TRUE(contains(e, "never closed")) << e;
}

// Found by fuzz_chat_template: an empty element in a tuple index left a null
// node in the tree, which the renderer then dereferenced.
TEST(ChatErrors, EmptyTupleIndexElementsAreSyntaxErrors) {
  EXPECT_TRUE(contains(error_of("{{ x[, 1] }}", R"({"x": {}})"), "an index before ','"));
  EXPECT_TRUE(contains(error_of("{{ x[1,, 2] }}", R"({"x": {}})"), "an index before ','"));
  EXPECT_TRUE(contains(error_of("{{ x[1, :2] }}", R"({"x": [1]})"), "slice inside a tuple index"));
  EXPECT_EQ(render("{{ d[1, 2] }}|{{ d[3,] }}", R"({"d": {}})"), "|");
}

TEST(ChatErrors, RaiseExceptionCarriesTheTemplatesMessage) {
  std::string e = error_of("\n  {{ raise_exception('Conversation roles must alternate') }}");
  EXPECT_TRUE(contains(e, "line 2, column")) << e;
  EXPECT_TRUE(e.size() > 0 && e.substr(e.size() - 33) == "Conversation roles must alternate") << e;
}

TEST(ChatErrors, RuntimeErrorsUsePythonMessages) {
  EXPECT_TRUE(contains(error_of("{{ 'a' + 1 }}"), "can only concatenate str (not \"int\") to str"));
  EXPECT_TRUE(contains(error_of("{{ 1 / 0 }}"), "division by zero"));
  EXPECT_TRUE(contains(error_of("{{ x.y }}"), "'x' is undefined"));
  EXPECT_TRUE(contains(error_of("{{ d.a.b }}", R"({"d": {}})"), "'dict object' has no attribute 'a'"));
  EXPECT_TRUE(contains(error_of("{{ 1|nosuchfilter }}"), "No filter named 'nosuchfilter'"));
  EXPECT_TRUE(contains(error_of("{{ 1 is nosuchtest }}"), "No test named 'nosuchtest'"));
  EXPECT_TRUE(contains(error_of("{{ range(1000000)|length }}"), "Range too big"));
}

TEST(ChatErrors, DeepNestingIsRejectedNotACrash) {
  EXPECT_TRUE(contains(error_of("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"),
                       "nests too deeply"));
  EXPECT_TRUE(contains(error_of("{{ " + std::string(5000, '[') + std::string(5000, ']') + " }}"), "nests too deeply"));
  std::string deep_ifs;
  for (int i = 0; i < 1000; ++i) deep_ifs += "{% if true %}";
  EXPECT_TRUE(contains(error_of(deep_ifs), "nests too deeply"));
  std::string long_chain = "{{ 1";
  for (int i = 0; i < 100000; ++i) long_chain += " + 1";
  EXPECT_TRUE(contains(error_of(long_chain + " }}"), "too long"));
  std::string filters = "{{ 'x'";
  for (int i = 0; i < 100000; ++i) filters += "|trim";
  EXPECT_TRUE(contains(error_of(filters + " }}"), "too long"));
}

TEST(ChatErrors, RecursionAndRunawayOutputAreBounded) {
  EXPECT_TRUE(contains(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"), "recursion depth"));
  EXPECT_TRUE(contains(error_of("{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}"
                                "{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"),
                       "exceeds"));
  auto loops = aph::chat::ChatTemplate::compile(
      "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}");
  aph::chat::RenderOptions budget;
  budget.max_steps = 100000;
  try {
    loops->render({}, budget);
    ADD_FAILURE() << "the step budget should stop 10^10 iterations";
  } catch (const aph::Error& e) {
    EXPECT_TRUE(contains(e.what(), "steps")) << e.what();
  }
  auto tmpl = aph::chat::ChatTemplate::compile("{% for i in range(1000) %}0123456789{% endfor %}");
  aph::chat::RenderOptions options;
  options.max_output_bytes = 5000;
  EXPECT_THROW(tmpl->render({}, options), aph::Error);
}

TEST(ChatErrors, SelfReferencingNamespaceDoesNotLeak) {
  // Under ASan's leak checker this fails if cycles through namespaces survive.
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.me = ns %}{% set ns.l = [ns] %}ok"), "ok");
}
