#include <gtest/gtest.h>

#include "core/text/stop_matcher.hpp"

namespace aph::text {
namespace {

TEST(StopMatcher, MatchesAcrossPiecesAndDropsTheRest) {
  StopMatcher m({"STOP"});
  auto r = m.push("a");
  EXPECT_EQ(r.text, "a");
  r = m.push("bS");
  EXPECT_EQ(r.text, "b");
  EXPECT_EQ(m.held_bytes(), 1u);
  r = m.push("TO");
  EXPECT_EQ(r.text, "");
  r = m.push("Pxyz");
  EXPECT_EQ(r.text, "");
  ASSERT_TRUE(r.stop_index.has_value());
  EXPECT_EQ(*r.stop_index, 0u);
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched_stop(), "STOP");
  EXPECT_EQ(m.push("more").text, "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, ReleasesHeldTextWhenItCannotBecomeAStop) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.push("xST").text, "x");
  EXPECT_EQ(m.push("AR").text, "STAR");
  EXPECT_EQ(m.held_bytes(), 0u);
  EXPECT_EQ(m.push("S").text, "");
  EXPECT_EQ(m.flush(), "S");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, HoldsTheLongestPossibleStart) {
  // The tail "aa" could still begin "aab"; a third 'a' pushes one out.
  StopMatcher m({"aab"});
  EXPECT_EQ(m.push("xaa").text, "x");
  EXPECT_EQ(m.push("a").text, "a");  // "aaa": only the last "aa" can still match
  auto r = m.push("b");
  EXPECT_EQ(r.text, "");  // "aab" is the held "aa" plus "b"
  EXPECT_TRUE(r.stop_index.has_value());
}

TEST(StopMatcher, IncludeStopStringInOutput) {
  StopMatcher m({"</s>", "\n\n"}, true);
  EXPECT_EQ(m.push("Hi\n").text, "Hi");
  auto r = m.push("\nnext");
  EXPECT_EQ(r.text, "\n\n");
  ASSERT_TRUE(r.stop_index.has_value());
  EXPECT_EQ(*r.stop_index, 1u);
}

TEST(StopMatcher, FirstCompletedStopWins) {
  StopMatcher m({"abc", "b"});
  auto r = m.push("xab");
  EXPECT_EQ(r.text, "xa");
  ASSERT_TRUE(r.stop_index.has_value());
  EXPECT_EQ(*r.stop_index, 1u);

  StopMatcher same_end({"c", "abc"});
  r = same_end.push("zabcd");
  EXPECT_EQ(r.text, "z");  // both end at 'c': the one starting earlier wins
  EXPECT_EQ(*r.stop_index, 1u);
}

TEST(StopMatcher, MultiByteStopStrings) {
  StopMatcher m({"。\n"});
  EXPECT_EQ(m.push("你好。").text, "你好");
  auto r = m.push("\n");
  EXPECT_EQ(r.text, "");
  EXPECT_TRUE(r.stop_index.has_value());
}

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
  StopMatcher m({"", ""});
  EXPECT_EQ(m.push("abc").text, "abc");
  EXPECT_EQ(m.flush(), "");
}

}  // namespace
}  // namespace aph::text
