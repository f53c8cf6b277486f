// Small text measures the filters share: characters, ASCII lower case, words.
#pragma once

#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tokenmill::dataset {

// Code points of UTF-8 text (bytes that do not continue a character).
inline int64_t code_points(std::string_view s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

inline std::string lower_ascii(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The whitespace-separated words of text, in ASCII lower case.
inline std::vector<std::string> lowercase_words(std::string_view text) {
  std::vector<std::string> out;
  std::string word;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!word.empty()) out.push_back(lower_ascii(std::move(word)));
      word.clear();
    } else {
      word.push_back(c);
    }
  }
  if (!word.empty()) out.push_back(lower_ascii(std::move(word)));
  return out;
}

}  // namespace tokenmill::dataset
