#include "tokenizer/unicode.h"

#include <array>

namespace tokenmill::tokenizer {

size_t utf8_sequence_length(uint8_t lead) {
  // Indexed by the top four bits.
  static constexpr uint8_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[lead >> 4];
}

void append_utf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

int valid_utf8_sequence_at(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(pos);
  if (lead < 0x80) return 1;
  int length = 0;
  // The allowed range of the second byte narrows for E0/ED/F0/F4 (RFC 3629 table), which
  // rules out overlong forms, surrogates and code points past U+10FFFF.
  uint8_t second_min = 0x80, second_max = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) second_min = 0xA0;
    if (lead == 0xED) second_max = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) second_min = 0x90;
    if (lead == 0xF4) second_max = 0x8F;
  } else {
    return 0;
  }
  for (int i = 1; i < length; ++i) {
    if (pos + i >= text.size()) return -1;
    const uint8_t b = byte(pos + i);
    const uint8_t lo = i == 1 ? second_min : 0x80;
    const uint8_t hi = i == 1 ? second_max : 0xBF;
    if (b < lo || b > hi) return 0;
  }
  return length;
}

namespace {

struct ByteLevelTable {
  std::array<std::string, 256> byte_to_text;
  std::array<int16_t, 512> code_point_to_byte;  // -1 where no byte maps there

  ByteLevelTable() {
    code_point_to_byte.fill(-1);
    // Bytes that are visible, non-space Latin-1 characters keep their own code point;
    // every other byte gets the next unused code point from U+0100 up, in byte order.
    const auto keeps_itself = [](int b) {
      return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    uint32_t next_moved = 0x100;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cp = keeps_itself(b) ? static_cast<uint32_t>(b) : next_moved++;
      append_utf8(cp, byte_to_text[b]);
      code_point_to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const ByteLevelTable& byte_level_table() {
  static const ByteLevelTable table;
  return table;
}

}  // namespace

const std::string& byte_to_byte_level(uint8_t b) { return byte_level_table().byte_to_text[b]; }

std::optional<uint8_t> byte_level_to_byte(uint32_t cp) {
  if (cp >= 512) return std::nullopt;
  const int16_t b = byte_level_table().code_point_to_byte[cp];
  if (b < 0) return std::nullopt;
  return static_cast<uint8_t>(b);
}

std::string encode_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += byte_to_byte_level(static_cast<uint8_t>(c));
  return out;
}

std::string decode_byte_level(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const int length = valid_utf8_sequence_at(text, pos);
    if (length <= 0) {  // not UTF-8: keep the byte as it is
      out.push_back(text[pos++]);
      continue;
    }
    uint32_t cp = static_cast<uint8_t>(text[pos]);
    if (length > 1) {
      cp &= 0xFFu >> (length + 1);
      for (int i = 1; i < length; ++i) cp = (cp << 6) | (static_cast<uint8_t>(text[pos + i]) & 0x3F);
    }
    if (const auto b = byte_level_to_byte(cp)) {
      out.push_back(static_cast<char>(*b));
    } else {
      out.append(text.substr(pos, length));
    }
    pos += length;
  }
  return out;
}

}  // namespace tokenmill::tokenizer
