// The \uXXXX escapes of a JSON string, with UTF-16 surrogates kept in pairs: a high
// surrogate (D800-DBFF) must be followed at once by "\u" and a low one (DC00-DFFF), and a
// low one may not stand alone (RFC 8259 leaves such strings' meaning undefined, and many
// parsers refuse them). Each hex digit is refused as soon as no continuation could make
// the escape valid, so a constrained writer never reaches a dead end. Shared by the JSON
// mode and JSON schema grammars.
#pragma once

#include <cstdint>

namespace tokenmill::engine {

class JsonUnicodeEscape {
 public:
  // A high surrogate waits for its pair: the string may continue only with "\u".
  bool low_surrogate_due() const { return low_due_; }
  // After "\u": the four digits follow.
  void begin() {
    digits_ = 0;
    high_ = false;
  }
  // Feeds one digit; false if it is not allowed.
  bool digit(char c) {
    int value = -1;
    if (c >= '0' && c <= '9') value = c - '0';
    if (c >= 'a' && c <= 'f') value = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') value = c - 'A' + 10;
    if (value < 0) return false;
    if (digits_ == 0) {
      first_is_d_ = value == 0xd;
      if (low_due_ && !first_is_d_) return false;
    } else if (digits_ == 1 && first_is_d_) {
      const bool low = value >= 0xc;
      if (low != low_due_ && (low || low_due_)) return false;  // a lone low, or a high where a low is due
      high_ = value >= 0x8 && !low;
    } else if (digits_ == 1 && low_due_) {
      return false;
    }
    if (++digits_ == 4) low_due_ = low_due_ ? false : high_;
    return true;
  }
  bool complete() const { return digits_ == 4; }

 private:
  uint8_t digits_ = 4;
  bool first_is_d_ = false;
  bool high_ = false;
  bool low_due_ = false;
};

}  // namespace tokenmill::engine
