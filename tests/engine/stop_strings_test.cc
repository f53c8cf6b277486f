#include "engine/stop_strings.h"

#include <gtest/gtest.h>

namespace tokenmill::engine {
namespace {

std::string feed(StopStringFilter& f, const std::vector<std::string>& pieces, bool* stopped) {
  std::string sent;
  *stopped = false;
  for (const auto& p : pieces) {
    auto out = f.push(p);
    sent += out.text;
    if (out.stopped) {
      *stopped = true;
      return sent;
    }
  }
  return sent + f.flush();
}

TEST(StopStrings, NoStopsPassesEverythingThrough) {
  StopStringFilter f({});
  EXPECT_EQ(f.push("hello").text, "hello");
}

TEST(StopStrings, StopSplitAcrossPiecesIsNeverSent) {
  StopStringFilter f({"</end>"});
  EXPECT_EQ(f.push("abc</").text, "abc");
  EXPECT_EQ(f.push("en").text, "");
  auto out = f.push("d>tail");
  EXPECT_TRUE(out.stopped);
  EXPECT_EQ(out.text, "");
}

TEST(StopStrings, FalseAlarmIsReleased) {
  StopStringFilter f({"STOP"});
  bool stopped;
  EXPECT_EQ(feed(f, {"ST", "OR", "M"}, &stopped), "STORM");
  EXPECT_FALSE(stopped);
}

TEST(StopStrings, EarliestOfSeveralStopsWins) {
  StopStringFilter f({"world", "lo w"});
  bool stopped;
  EXPECT_EQ(feed(f, {"hello world"}, &stopped), "hel");
  EXPECT_TRUE(stopped);
}

TEST(StopStrings, HeldTextIsFlushedAtTheEnd) {
  StopStringFilter f({"\n\n"});
  auto out = f.push("line\n");
  EXPECT_EQ(out.text, "line");
  EXPECT_EQ(f.flush(), "\n");
}

TEST(StopStrings, DoesNotSplitUtf8) {
  StopStringFilter f({"\xC3\xA9x"});  // "éx"
  auto out = f.push("caf\xC3\xA9");
  EXPECT_EQ(out.text, "caf");
  out = f.push("!");
  EXPECT_EQ(out.text, "\xC3\xA9!");
}

}  // namespace
}  // namespace tokenmill::engine
