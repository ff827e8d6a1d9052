// Whitespace control as HF configures jinja2: trim_blocks, lstrip_blocks,
// explicit -/+ markers, raw blocks, comments, the dropped trailing newline.
#include <gtest/gtest.h>

#include "tests/unit/chat/render_helper.hpp"

using aph::chat::testing::render;

TEST(ChatWhitespace, TrimBlocksEatsOneNewlineAfterABlockTag) {
  EXPECT_EQ(render("{% if true %}\nyes\n{% endif %}\nafter"), "yes\nafter");
  EXPECT_EQ(render("{% if true %}\n\nyes{% endif %}"), "\nyes");
}

TEST(ChatWhitespace, TrimBlocksDoesNotApplyToPrintTags) {
  EXPECT_EQ(render("{{ 'a' }}\nb"), "a\nb");
}

TEST(ChatWhitespace, LstripBlocksRemovesIndentationBeforeBlockTags) {
  EXPECT_EQ(render("  {% if true %}\n    x\n  {% endif %}\n"), "    x\n");
  // Not at the start of a line: nothing is stripped.
  EXPECT_EQ(render("a  {% if true %}b{% endif %}"), "a  b");
  // Print tags are not lstripped.
  EXPECT_EQ(render("  {{ 'v' }}"), "  v");
}

TEST(ChatWhitespace, MinusStripsAllWhitespaceIncludingNewlines) {
  EXPECT_EQ(render("a  \n  {{- 'b' -}}  \n  c"), "abc");
  EXPECT_EQ(render("x\n\n{%- if true -%}\n\n y {%- endif %}"), "xy");
}

TEST(ChatWhitespace, PlusDisablesLstripAndTrim) {
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");
  EXPECT_EQ(render("{% if true +%}\nx{% endif %}"), "\nx");
}

TEST(ChatWhitespace, CommentsDisappearAndFollowTheSameRules) {
  EXPECT_EQ(render("a{# note #}b"), "ab");
  EXPECT_EQ(render("a\n  {# note #}\nb"), "a\nb");
  EXPECT_EQ(render("a {#- note -#} b"), "ab");
}

TEST(ChatWhitespace, RawBlocksKeepTagsLiteral) {
  EXPECT_EQ(render("{% raw %}{{ not evaluated }}{% endraw %}"), "{{ not evaluated }}");
  EXPECT_EQ(render("{%- raw -%}  {% x %}  {%- endraw %}"), "{% x %}");
}

TEST(ChatWhitespace, OneTrailingNewlineIsDropped) {
  EXPECT_EQ(render("hello\n"), "hello");
  EXPECT_EQ(render("hello\n\n"), "hello\n");
  EXPECT_EQ(render("a\r\nb"), "a\nb");
}

TEST(ChatWhitespace, TrimAfterEndTagEnablesIndentationStripOnNextLine) {
  const char* src =
      "{% for x in [1, 2] %}\n"
      "    {% if x == 2 %}\n"
      "two\n"
      "    {% endif %}\n"
      "{% endfor %}\n";
  EXPECT_EQ(render(src), "two\n");
}
