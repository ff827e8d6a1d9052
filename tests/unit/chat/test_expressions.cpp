// Expressions: literals, operators with Python semantics, Python str/repr of
// values, tests, undefined behaviour.
#include <gtest/gtest.h>

#include "core/common/error.hpp"
#include "tests/unit/chat/render_helper.hpp"

using aph::chat::testing::render;

TEST(ChatExpressions, PythonReprOfValues) {
  EXPECT_EQ(render("{{ none }} {{ true }} {{ False }} {{ 1.0 }} {{ 10 / 4 }} {{ 1e16 }} {{ 0.00001 }}"),
            "None True False 1.0 2.5 1e+16 1e-05");
  EXPECT_EQ(render("{{ {'a': 1, 'b': [1.5, \"it's\", none, (1,)]} }}"),
            "{'a': 1, 'b': [1.5, \"it's\", None, (1,)]}");
  EXPECT_EQ(render("{{ x }}", R"({"x": {"k": ["v", 2, true, null]}})"), "{'k': ['v', 2, True, None]}");
  EXPECT_EQ(render("{{ 'a\\nb' ~ ['a\\nb'] }}"), "a\nb['a\\nb']");
}

TEST(ChatExpressions, ArithmeticFollowsPython) {
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }}"),
            "3 -4 2 -2 1024 0.5");
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 'ab' * 3 }} {{ [1] + [2] }}"), "7 9 ababab [1, 2]");
  EXPECT_EQ(render("{{ 1 + 1.5 }} {{ true + 1 }} {{ -(3) }}"), "2.5 2 -3");
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ none ~ undefined_thing }}"), "a1None");
}

TEST(ChatExpressions, ComparisonsChainAndMembership) {
  EXPECT_EQ(render("{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 1 == 1.0 }} {{ 'b' > 'a' }}"), "True False True True");
  EXPECT_EQ(render("{{ 'ell' in 'hello' }} {{ 2 not in [1, 2] }} {{ 'k' in {'k': 1} }}"), "True False True");
}

TEST(ChatExpressions, LogicReturnsOperandsLikePython) {
  EXPECT_EQ(render("{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ not [] }} {{ none or [] }}"), "x b True []");
  EXPECT_EQ(render("{{ 'y' if 1 > 2 else 'n' }}|{{ 'y' if false }}|"), "n||");
}

TEST(ChatExpressions, SlicingAndIndexing) {
  EXPECT_EQ(render("{{ 'hello'[1:3] }} {{ 'hello'[::-1] }} {{ [1,2,3,4][-2:] }} {{ [1,2,3][0] }}"),
            "el olleh [3, 4] 1");
  EXPECT_EQ(render("{{ 'héllo'[1] }}{{ 'héllo'|length }}"), "é5");
  EXPECT_EQ(render("{{ m.content }} {{ m['role'] }}", R"({"m": {"role": "user", "content": "hi"}})"), "hi user");
}

TEST(ChatExpressions, UndefinedPrintsEmptyButFailsWhenUsed) {
  EXPECT_EQ(render("[{{ missing }}][{{ d.nope }}]", R"({"d": {}})"), "[][]");
  EXPECT_EQ(render("{% for x in missing %}x{% endfor %}{{ missing|length }}"), "0");
  EXPECT_THROW(render("{{ missing.attr }}"), aph::Error);
  EXPECT_THROW(render("{{ missing + 1 }}"), aph::Error);
  EXPECT_THROW(render("{{ missing() }}"), aph::Error);
}

TEST(ChatExpressions, Tests) {
  EXPECT_EQ(render("{{ x is defined }} {{ y is undefined }} {{ none is none }} {{ 'a' is string }}", R"({"x": 1})"),
            "True True True True");
  EXPECT_EQ(render("{{ 1 is number }} {{ 1 is integer }} {{ 1.5 is float }} {{ true is boolean }}"),
            "True True True True");
  EXPECT_EQ(render("{{ {} is mapping }} {{ [] is iterable }} {{ 'x' is sequence }} {{ 3 is odd }} {{ 4 is even }}"),
            "True True True True True");
  EXPECT_EQ(render("{{ 9 is divisibleby 3 }} {{ 'a' is equalto 'a' }} {{ 2 is in [1, 2] }} {{ 'abc' is lower }}"),
            "True True True True");
  EXPECT_EQ(render("{{ x is not none }} {{ not x is none }}", R"({"x": null})"), "False False");
  EXPECT_EQ(render("{{ false is sameas false }} {{ 1 is true }} {{ true is true }}"), "True False True");
}

TEST(ChatExpressions, StringMethods) {
  EXPECT_EQ(render("{{ '  a b  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}"),
            "a b|a|['a', 'b', '', 'c']|['a', 'b']");
  EXPECT_EQ(render("{{ 'Hello'.startswith('He') }} {{ 'Hello'.endswith(('x', 'lo')) }} {{ 'a-b-c'.rsplit('-', 1) }}"),
            "True True ['a-b', 'c']");
  EXPECT_EQ(render("{{ 'hello world'.title() }} {{ 'ABC'.lower() }} {{ 'abc'.upper() }} {{ 'hELLO'.capitalize() }}"),
            "Hello World abc ABC Hello");
  EXPECT_EQ(render("{{ 'aXbX'.replace('X', '-') }} {{ 'banana'.find('an') }} {{ 'banana'.count('a') }}"),
            "a-b- 1 3");
  EXPECT_EQ(render("{{ '{} and {name}'.format(1, name='two') }} {{ '%s=%d' % ('x', 3) }} {{ '%05.2f' % 3.14159 }}"),
            "1 and two x=3 03.14");
  EXPECT_EQ(render("{{ '123'.isdigit() }} {{ 'a1'.isalpha() }} {{ 'l1\\nl2'.splitlines() }} {{ '-'.join(['a','b']) }}"),
            "True False ['l1', 'l2'] a-b");
}

TEST(ChatExpressions, DictAndListMethods) {
  const char* ctx = R"({"d": {"a": 1, "b": 2}, "l": [3, 1, 3]})";
  EXPECT_EQ(render("{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 9) }} {{ d.keys()|list }} {{ d.values()|list }}", ctx),
            "1 None 9 ['a', 'b'] [1, 2]");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", ctx), "a=1;b=2;");
  EXPECT_EQ(render("{{ l.index(1) }} {{ l.count(3) }} {{ l.pop() }} {{ l }}", ctx), "1 2 3 [3, 1]");
}

TEST(ChatExpressions, SandboxRefusesMutatingMethods) {
  try {
    render("{% set x = [1].append(2) %}");
    FAIL() << "append should be refused";
  } catch (const aph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("access to attribute 'append' of 'list' object is unsafe."),
              std::string::npos);
  }
  EXPECT_THROW(render("{{ d.update({'b': 1}) }}", R"({"d": {}})"), aph::Error);
}
