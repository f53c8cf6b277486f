// Ollama's keep_alive values: seconds as numbers, Go-style durations, negative = forever.
#include "server/model_set.h"

#include <gtest/gtest.h>

namespace tokenmill::server {
namespace {

using std::chrono::milliseconds;

TEST(KeepAlive, NumbersAreSecondsAndNegativeIsForever) {
  EXPECT_EQ(*parse_keep_alive_seconds(0), milliseconds(0));
  EXPECT_EQ(*parse_keep_alive_seconds(2.5), milliseconds(2500));
  EXPECT_EQ(*parse_keep_alive_seconds(-1), milliseconds(-1));
  EXPECT_EQ(*parse_keep_alive("300"), milliseconds(300000));
  EXPECT_EQ(*parse_keep_alive("-1"), milliseconds(-1));
}

TEST(KeepAlive, Durations) {
  EXPECT_EQ(*parse_keep_alive("5m"), milliseconds(300000));
  EXPECT_EQ(*parse_keep_alive("1h30m"), milliseconds(5400000));
  EXPECT_EQ(*parse_keep_alive("10s"), milliseconds(10000));
  EXPECT_EQ(*parse_keep_alive("250ms"), milliseconds(250));
  EXPECT_EQ(*parse_keep_alive("-5m"), milliseconds(-1));
  EXPECT_EQ(*parse_keep_alive("0s"), milliseconds(0));
}

TEST(KeepAlive, MalformedValuesAreRefused) {
  for (const char* bad : {"", "m", "5x", "5 m", "1h-3m", "abc", "5m3"}) {
    EXPECT_FALSE(parse_keep_alive(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace tokenmill::server
