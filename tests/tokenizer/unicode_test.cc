#include "tokenizer/unicode.h"

#include <gtest/gtest.h>

#include <set>

namespace tokenmill::tokenizer {
namespace {

TEST(Unicode, SequenceLengthFromLeadByte) {
  EXPECT_EQ(utf8_sequence_length('a'), 1u);
  EXPECT_EQ(utf8_sequence_length(0x80), 1u);  // a stray continuation byte stands alone
  EXPECT_EQ(utf8_sequence_length(0xC3), 2u);
  EXPECT_EQ(utf8_sequence_length(0xE4), 3u);
  EXPECT_EQ(utf8_sequence_length(0xF0), 4u);
}

TEST(Unicode, ValidSequences) {
  EXPECT_EQ(valid_utf8_sequence_at("a", 0), 1);
  EXPECT_EQ(valid_utf8_sequence_at("\xC3\xA9", 0), 2);          // é
  EXPECT_EQ(valid_utf8_sequence_at("\xE4\xB8\xAD", 0), 3);      // 中
  EXPECT_EQ(valid_utf8_sequence_at("\xF0\x9F\x98\x80", 0), 4);  // 😀
  EXPECT_EQ(valid_utf8_sequence_at("\xF0\x9F\x98", 0), -1);     // cut short
  EXPECT_EQ(valid_utf8_sequence_at("\xC3", 0), -1);
  EXPECT_EQ(valid_utf8_sequence_at("\x80", 0), 0);              // continuation first
  EXPECT_EQ(valid_utf8_sequence_at("\xC0\xAF", 0), 0);          // overlong
  EXPECT_EQ(valid_utf8_sequence_at("\xED\xA0\x80", 0), 0);      // surrogate
  EXPECT_EQ(valid_utf8_sequence_at("\xF4\x90\x80\x80", 0), 0);  // past U+10FFFF
  EXPECT_EQ(valid_utf8_sequence_at("\xE4\x41", 0), 0);          // bad continuation
  EXPECT_EQ(valid_utf8_sequence_at("\xFF", 0), 0);
}

TEST(Unicode, ByteLevelTableIsGpt2s) {
  EXPECT_EQ(byte_to_byte_level(' '), "\xC4\xA0");   // Ġ = U+0120
  EXPECT_EQ(byte_to_byte_level('\n'), "\xC4\x8A"); // Ċ = U+010A
  EXPECT_EQ(byte_to_byte_level('A'), "A");
  EXPECT_EQ(byte_to_byte_level(0xAD), "\xC5\x83");  // soft hyphen is moved: U+0143
  std::set<std::string> seen;
  for (int b = 0; b < 256; ++b) {
    const std::string& text = byte_to_byte_level(static_cast<uint8_t>(b));
    EXPECT_TRUE(seen.insert(text).second) << b;
    EXPECT_EQ(decode_byte_level(text), std::string(1, static_cast<char>(b))) << b;
  }
}

TEST(Unicode, ByteLevelRoundTrip) {
  const std::string raw = "héllo 世界\n\t\x01\xFF 😀";
  EXPECT_EQ(decode_byte_level(encode_byte_level(raw)), raw);
  EXPECT_EQ(encode_byte_level("a b"), "a\xC4\xA0" "b");
}

}  // namespace
}  // namespace tokenmill::tokenizer
