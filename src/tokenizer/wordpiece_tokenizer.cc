#include "tokenizer/wordpiece_tokenizer.h"

#include <algorithm>
#include <cstdint>

#include "tokenizer/unicode.h"

namespace tokenmill::tokenizer {

namespace {

#include "tokenizer/bert_normalization_table.inc"

// GGUF's WordPiece vocabularies (as llama.cpp's converter writes them) mark the tokens
// that begin a word with U+2581 and write continuations ("##ing") bare ("ing").
constexpr const char* kWordStart = "\xe2\x96\x81";

template <size_t N>
bool in_ranges(const CodeRange (&ranges)[N], uint32_t cp) {
  auto it = std::upper_bound(std::begin(ranges), std::end(ranges), cp,
                             [](uint32_t c, const CodeRange& r) { return c < r.first; });
  return it != std::begin(ranges) && cp <= std::prev(it)->last;
}

bool is_whitespace(uint32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || in_ranges(kBertWhitespace, cp);
}

bool is_control(uint32_t cp) { return in_ranges(kBertControl, cp); }

bool is_punctuation(uint32_t cp) { return in_ranges(kBertPunctuation, cp); }

// The CJK ideograph blocks BERT puts spaces around.
bool is_cjk(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// Appends cp with its accents stripped and lowercased.
void append_folded(uint32_t cp, std::string& out) {
  if (cp >= 0xAC00 && cp <= 0xD7A3) {  // a Hangul syllable: NFD is its jamo, by arithmetic
    const uint32_t s = cp - 0xAC00;
    append_utf8(0x1100 + s / (21 * 28), out);
    append_utf8(0x1161 + (s % (21 * 28)) / 28, out);
    if (s % 28 != 0) append_utf8(0x11A7 + s % 28, out);
    return;
  }
  auto it = std::lower_bound(std::begin(kBertFolded), std::end(kBertFolded), cp,
                             [](const BertFold& f, uint32_t c) { return f.cp < c; });
  if (it != std::end(kBertFolded) && it->cp == cp) {
    out += it->text;
  } else {
    append_utf8(cp, out);
  }
}

// The code point at text[pos] and its length; invalid bytes read as U+FFFD, one byte.
uint32_t next_code_point(std::string_view text, size_t pos, size_t& length) {
  const int n = valid_utf8_sequence_at(text, pos);
  if (n <= 0) {
    length = 1;
    return 0xFFFD;
  }
  length = static_cast<size_t>(n);
  const auto* b = reinterpret_cast<const unsigned char*>(text.data() + pos);
  if (n == 1) return b[0];
  if (n == 2) return ((b[0] & 0x1Fu) << 6) | (b[1] & 0x3Fu);
  if (n == 3) return ((b[0] & 0x0Fu) << 12) | ((b[1] & 0x3Fu) << 6) | (b[2] & 0x3Fu);
  return ((b[0] & 0x07u) << 18) | ((b[1] & 0x3Fu) << 12) | ((b[2] & 0x3Fu) << 6) | (b[3] & 0x3Fu);
}

}  // namespace

std::string bert_normalize(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    size_t length = 0;
    const uint32_t cp = next_code_point(text, pos, length);
    pos += length;
    if (cp == 0 || cp == 0xFFFD || is_control(cp)) continue;
    if (is_whitespace(cp)) {
      out += ' ';
    } else if (is_cjk(cp)) {
      out += ' ';
      append_folded(cp, out);
      out += ' ';
    } else {
      append_folded(cp, out);
    }
  }
  return out;
}

void WordPieceTokenizer::encode(std::string_view text, std::vector<int32_t>& out) const {
  const std::string normalized = bert_normalize(text);
  const std::string_view s = normalized;
  size_t word_begin = 0;
  auto flush = [&](size_t end) {
    if (end > word_begin) encode_word(s.substr(word_begin, end - word_begin), out);
  };
  for (size_t pos = 0; pos < s.size();) {
    size_t length = 0;
    const uint32_t cp = next_code_point(s, pos, length);
    if (is_whitespace(cp)) {
      flush(pos);
      word_begin = pos + length;
    } else if (is_punctuation(cp)) {
      flush(pos);
      encode_word(s.substr(pos, length), out);
      word_begin = pos + length;
    }
    pos += length;
  }
  flush(s.size());
}

void WordPieceTokenizer::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  // Character boundaries, so that pieces never split a character.
  std::vector<size_t> bounds = {0};
  for (size_t pos = 0; pos < word.size();) {
    pos += std::max<size_t>(1, static_cast<size_t>(std::max(1, valid_utf8_sequence_at(word, pos))));
    bounds.push_back(std::min(pos, word.size()));
  }
  if (bounds.size() - 1 > kMaxWordChars) {
    out.push_back(vocab_->unk_id);
    return;
  }
  std::vector<int32_t> pieces;
  std::string candidate;
  for (size_t start = 0; start + 1 < bounds.size();) {
    size_t end = bounds.size() - 1;
    int32_t found = kNoToken;
    for (; end > start; --end) {
      candidate.assign(start == 0 ? kWordStart : "");
      candidate.append(word.substr(bounds[start], bounds[end] - bounds[start]));
      if (auto id = vocab_->find(candidate)) {
        found = *id;
        break;
      }
    }
    if (found == kNoToken) {
      out.push_back(vocab_->unk_id);
      return;
    }
    pieces.push_back(found);
    start = end;
  }
  out.insert(out.end(), pieces.begin(), pieces.end());
}

}  // namespace tokenmill::tokenizer
