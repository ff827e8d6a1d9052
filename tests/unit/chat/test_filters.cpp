// Builtin filters with jinja2 3.1 argument names, plus HF's tojson.
#include <gtest/gtest.h>

#include "core/common/error.hpp"
#include "tests/unit/chat/render_helper.hpp"

using aph::chat::testing::render;

TEST(ChatFilters, StringFilters) {
  EXPECT_EQ(render("{{ '  x  '|trim }}|{{ 'ab'|upper }}|{{ 'AB'|lower }}|{{ 'hello world-x'|title }}|{{ 'aBC'|capitalize }}"),
            "x|AB|ab|Hello World-X|Abc");
  EXPECT_EQ(render("{{ 'a.b.c'|replace('.', '/') }}|{{ 'a.b.c'|replace('.', '/', 1) }}|{{ 'x'|center(5) }}|"),
            "a/b/c|a/b.c|  x  |");
  EXPECT_EQ(render("{{ 'one two  three'|wordcount }} {{ '%s-%s'|format('a', 'b') }} {{ '<&>'|e }}"),
            "3 a-b &lt;&amp;&gt;");
  EXPECT_EQ(render("{{ 'l1\\nl2\\n\\nl4'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(1, blank=true) }}"),
            "l1\n  l2\n\n  l4|  a\n  b|a\n \n b");
}

TEST(ChatFilters, DefaultWithBooleanArgument) {
  EXPECT_EQ(render("{{ missing|default('d') }} {{ ''|default('d') }} {{ ''|default('d', true) }} {{ x|d('y') }}",
                   R"({"x": 0})"),
            "d  d 0");
}

TEST(ChatFilters, SequenceFilters) {
  EXPECT_EQ(render("{{ [3, 1, 2]|sort }} {{ [3, 1, 2]|sort(reverse=true) }} {{ ['b', 'A', 'c']|sort }}"),
            "[1, 2, 3] [3, 2, 1] ['A', 'b', 'c']");
  EXPECT_EQ(render("{{ [1, 2, 3]|first }} {{ [1, 2, 3]|last }} {{ [1, 2, 3]|length }} {{ [1, 2, 3]|sum }} {{ 'abc'|list }}"),
            "1 3 3 6 ['a', 'b', 'c']");
  EXPECT_EQ(render("{{ [1, 2, 2, 'a', 'A']|unique|list }} {{ [1, 2, 3]|reverse|list }} {{ [4, 1, 9]|max }} {{ [4, 1, 9]|min }}"),
            "[1, 2, 'a'] [3, 2, 1] 9 1");
  EXPECT_EQ(render("{{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ [1, 2, 3]|join(', ') }} {{ {'b': 1, 'a': 2}|dictsort }}"),
            "[[1, 2], [3, 4], [5]] 1, 2, 3 [('a', 2), ('b', 1)]");
}

TEST(ChatFilters, SelectMapAndFriends) {
  const char* ctx = R"({"ms": [{"role": "system", "c": 1}, {"role": "user", "c": 2}, {"role": "user", "c": 3}]})";
  EXPECT_EQ(render("{{ ms|selectattr('role', 'equalto', 'user')|map(attribute='c')|list }}", ctx), "[2, 3]");
  EXPECT_EQ(render("{{ ms|rejectattr('role', 'eq', 'user')|list|length }}", ctx), "1");
  EXPECT_EQ(render("{{ [1, 2, 3, 4]|select('odd')|list }} {{ [0, 1, '']|reject|list }} {{ ['a', 'b']|map('upper')|join }}"),
            "[1, 3] [0, ''] AB");
  EXPECT_EQ(render("{{ ms|map(attribute='missing', default='-')|join }}", ctx), "---");
  // Like jinja2, these are one-shot iterators, not lists.
  EXPECT_THROW(render("{{ [1]|select|tojson }}"), aph::Error);
  EXPECT_EQ(render("{{ none|selectattr('x')|list }}"), "[]");
}

TEST(ChatFilters, NumberConversions) {
  EXPECT_EQ(render("{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ '0x1A'|int(0, 16) }}"),
            "42 4 0 7 3 26");
  EXPECT_EQ(render("{{ '1.5'|float }} {{ 'x'|float }} {{ 2|float }} {{ -3|abs }} {{ 2.5|round }} {{ 2.675|round(2) }}"),
            "1.5 0.0 2.0 3 2.0 2.67");
  EXPECT_EQ(render("{{ 3.14159|round(2, 'floor') }} {{ 1|string ~ 2 }} {{ 42|round }}"), "3.14 12 42");
}

TEST(ChatFilters, ToJsonMatchesHuggingFace) {
  const char* ctx = R"({"t": {"name": "f", "args": {"q": "Grüße \"x\"\n", "n": 1.0, "ok": true, "none": null}}})";
  EXPECT_EQ(render("{{ t|tojson }}", ctx),
            R"({"name": "f", "args": {"q": "Grüße \"x\"\n", "n": 1.0, "ok": true, "none": null}})");
  EXPECT_EQ(render("{{ [1, {'a': []}]|tojson(indent=2) }}"), "[\n  1,\n  {\n    \"a\": []\n  }\n]");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}"), R"({"a": 2, "b": 1})");
  EXPECT_EQ(render("{{ 'é'|tojson(ensure_ascii=true) }}"), R"("\u00e9")");
  EXPECT_EQ(render("{{ (1, 2)|tojson(separators=(',', ':')) }}"), "[1,2]");
  EXPECT_THROW(render("{{ missing|tojson }}"), aph::Error);
}

TEST(ChatFilters, FilterBlocksAndItems) {
  EXPECT_EQ(render("{% filter upper %}abc{{ 'd' }}{% endfilter %}"), "ABCD");
  EXPECT_EQ(render("{% for k, v in {'x': 1}|items %}{{ k }}{{ v }}{% endfor %}"), "x1");
}

TEST(ChatFilters, SafeMarkupEscapesWhatIsAddedToIt) {
  // markupsafe: Markup + str escapes the str.
  EXPECT_EQ(render("{{ \"it's \"|safe + \"<b>'\" }}"), "it's &lt;b&gt;&#39;");
  EXPECT_EQ(render("{{ \"a\"|safe ~ \"<b>\" }}"), "a<b>");
}
