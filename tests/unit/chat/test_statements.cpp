// Statements: for/loop.*, loop controls, set/namespace scoping, macros and
// call blocks, with, globals.
#include <gtest/gtest.h>

#include "core/chat/chat_template.hpp"
#include "core/common/error.hpp"
#include "tests/unit/chat/render_helper.hpp"

using aph::chat::testing::render;

TEST(ChatStatements, IfElifElse) {
  const char* src = "{% if x > 2 %}big{% elif x > 0 %}small{% else %}none{% endif %}";
  EXPECT_EQ(render(src, R"({"x": 3})"), "big");
  EXPECT_EQ(render(src, R"({"x": 1})"), "small");
  EXPECT_EQ(render(src, R"({"x": 0})"), "none");
}

TEST(ChatStatements, LoopVariables) {
  EXPECT_EQ(render("{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                   "{{ loop.first|int }}{{ loop.last|int }}{{ loop.length }} {% endfor %}"),
            "1032103 2121003 3210013 ");
  EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.previtem|default('-') }}{{ loop.nextitem|default('-') }}"
                   "{{ loop.cycle('a', 'b') }},{% endfor %}"),
            "-2a,13b,2-a,");
  EXPECT_EQ(render("{% for x in [1, 2, 3, 4] if x is even %}{{ x }}/{{ loop.length }} {% endfor %}"), "2/2 4/2 ");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for k in {'a': 1, 'b': 2} %}{{ k }}{% endfor %}"), "ab");
}

TEST(ChatStatements, BreakAndContinue) {
  EXPECT_EQ(render("{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}"
                   "{% endif %}{{ x }}{% endfor %}"),
            "013");
  EXPECT_THROW(render("{% break %}"), aph::Error);
}

TEST(ChatStatements, SetInsideLoopDoesNotLeakButNamespaceDoes) {
  EXPECT_EQ(render("{% set x = 1 %}{% for i in range(3) %}{{ x }}{% set x = x + 1 %}{{ x }};{% endfor %}{{ x }}"),
            "12;12;12;1");
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in range(3) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"),
            "3");
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = (3, 4) %}{{ t }}"), "12(3, 4)");
  EXPECT_EQ(render("{% set block | upper %}x{{ 'y' }}{% endset %}{{ block }}"), "XY");
  EXPECT_THROW(render("{% set x = 1 %}{% set x.y = 2 %}"), aph::Error);
}

TEST(ChatStatements, MacrosWithDefaultsAndCaller) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                   "{{ greet('Ann') }} {{ greet('Bo', punct='?') }} {{ greet(punct='.', name='Cy') }}"),
            "Hi Ann! Hi Bo? Hi Cy.");
  EXPECT_EQ(render("{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}"
                   "{% call wrap('b') %}bold{% endcall %}"),
            "<b>bold</b>");
  EXPECT_EQ(render("{% macro row(x) %}[{{ caller(x * 2) }}]{% endmacro %}{% call(v) row(4) %}{{ v }}{% endcall %}"),
            "[8]");
  // Macros see variables assigned after their definition (resolved at call time).
  EXPECT_EQ(render("{% macro m() %}{{ z }}{% endmacro %}{% set z = 3 %}{{ m() }}"), "3");
  EXPECT_EQ(render("{% macro m(a) %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}"), "(2,){'k': 3}");
}

TEST(ChatStatements, RecursiveLoops) {
  const char* ctx = R"({"tree": [{"n": "a", "c": [{"n": "b", "c": []}]}, {"n": "d", "c": []}]})";
  EXPECT_EQ(render("{% for x in tree recursive %}{{ x.n }}{{ loop.depth }}({{ loop(x.c) }}){% endfor %}", ctx),
            "a1(b2())d1()");
}

TEST(ChatStatements, WithBlockScopes) {
  EXPECT_EQ(render("{% set a = 1 %}{% with a = 2, b = a %}{{ a }}{{ b }}{% endwith %}{{ a }}"), "211");
}

TEST(ChatStatements, Globals) {
  EXPECT_EQ(render("{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ dict(a=1) }} {{ namespace(x=1).x }}"),
            "[0, 1, 2] [1, 3, 5] {'a': 1} 1");
  aph::chat::RenderOptions options;
  options.fixed_now = aph::chat::parse_civil_time("2024-07-26T13:45:00");
  auto tmpl = aph::chat::ChatTemplate::compile("{{ strftime_now('%d %b %Y %H:%M %A') }}");
  EXPECT_EQ(tmpl->render({}, options), "26 Jul 2024 13:45 Friday");
  EXPECT_THROW(aph::chat::parse_civil_time("yesterday"), aph::Error);
}

TEST(ChatStatements, VariablesShadowGlobalsAndComeFromJson) {
  EXPECT_EQ(render("{{ range }}", R"({"range": 5})"), "5");
  EXPECT_EQ(render("{{ messages[0].content }}{{ add_generation_prompt }}{{ n * 2 }}{{ f }}",
                   R"({"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": true, "n": 21, "f": 0.5})"),
            "hiTrue420.5");
}
