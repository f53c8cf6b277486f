#include "engine/json_string_chars.h"

#include <algorithm>
#include <cstdio>

namespace tokenmill::engine {

CodePoints CodePoints::range(uint32_t first, uint32_t last) {
  CodePoints c;
  c.add(first, last);
  return c;
}

void CodePoints::add(uint32_t first, uint32_t last) {
  if (first > last) return;
  last = std::min(last, kMax);
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  merged.reserve(ranges_.size() + 1);
  bool placed = false;
  for (const auto& r : ranges_) {
    if (r.second + 1 < first) {
      merged.push_back(r);
    } else if (last + 1 < r.first) {
      if (!placed) merged.emplace_back(first, last);
      placed = true;
      merged.push_back(r);
    } else {  // overlapping or adjacent: widen the new range
      first = std::min(first, r.first);
      last = std::max(last, r.second);
    }
  }
  if (!placed) merged.emplace_back(first, last);
  std::sort(merged.begin(), merged.end());
  ranges_ = std::move(merged);
}

void CodePoints::add(const CodePoints& other) {
  for (const auto& [first, last] : other.ranges_) add(first, last);
}

CodePoints CodePoints::complement() const {
  CodePoints c;
  uint32_t next = 0;
  for (const auto& [first, last] : ranges_) {
    if (first > next) c.add(next, first - 1);
    next = last + 1;
  }
  if (next <= kMax) c.add(next, kMax);
  return c;
}

namespace {

int utf8_length(uint32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

std::vector<uint8_t> utf8_encode(uint32_t c) {
  if (c < 0x80) return {static_cast<uint8_t>(c)};
  if (c < 0x800) return {static_cast<uint8_t>(0xC0 | (c >> 6)), static_cast<uint8_t>(0x80 | (c & 0x3F))};
  if (c < 0x10000) {
    return {static_cast<uint8_t>(0xE0 | (c >> 12)), static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3F)),
            static_cast<uint8_t>(0x80 | (c & 0x3F))};
  }
  return {static_cast<uint8_t>(0xF0 | (c >> 18)), static_cast<uint8_t>(0x80 | ((c >> 12) & 0x3F)),
          static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3F)), static_cast<uint8_t>(0x80 | (c & 0x3F))};
}

// [first, last] of one encoded length, split until every byte position is a free range.
void split_same_length(uint32_t first, uint32_t last, std::vector<std::vector<std::pair<uint8_t, uint8_t>>>& out) {
  const int n = utf8_length(first);
  for (int i = 1; i < n; ++i) {
    const uint32_t low_bits = (1u << (6 * i)) - 1;
    if ((first & ~low_bits) == (last & ~low_bits)) continue;
    if ((first & low_bits) != 0) {
      split_same_length(first, first | low_bits, out);
      split_same_length((first | low_bits) + 1, last, out);
      return;
    }
    if ((last & low_bits) != low_bits) {
      split_same_length(first, (last & ~low_bits) - 1, out);
      split_same_length(last & ~low_bits, last, out);
      return;
    }
  }
  const std::vector<uint8_t> a = utf8_encode(first), b = utf8_encode(last);
  std::vector<std::pair<uint8_t, uint8_t>> sequence;
  for (size_t i = 0; i < a.size(); ++i) sequence.emplace_back(a[i], b[i]);
  out.push_back(std::move(sequence));
}

}  // namespace

std::vector<std::vector<std::pair<uint8_t, uint8_t>>> utf8_byte_ranges(uint32_t first, uint32_t last) {
  std::vector<std::vector<std::pair<uint8_t, uint8_t>>> out;
  std::vector<std::pair<uint32_t, uint32_t>> pending;
  // Surrogates are not characters; the encoded lengths change at 0x80, 0x800, 0x10000.
  const std::pair<uint32_t, uint32_t> pieces[] = {{0, 0x7F}, {0x80, 0x7FF}, {0x800, 0xD7FF}, {0xE000, 0xFFFF}, {0x10000, 0x10FFFF}};
  for (const auto& [lo, hi] : pieces) {
    const uint32_t a = std::max(first, lo), b = std::min(last, hi);
    if (a <= b) split_same_length(a, b, out);
  }
  return out;
}

int32_t json_string_char_rule(Grammar& grammar, const CodePoints& chars, int32_t length_counter) {
  std::vector<Grammar::Sequence> alternatives;
  auto begin = [&] {
    Grammar::Sequence s;
    if (length_counter >= 0) s.push_back(Grammar::mark(length_counter));
    return s;
  };
  ByteSet plain;  // ASCII written as itself
  for (const auto& [first, last] : chars.ranges()) {
    for (uint32_t c = first; c <= std::min<uint32_t>(last, 0x7F); ++c) {
      if (c >= 0x20 && c != '"' && c != '\\') {
        plain.set(c);
        continue;
      }
      Grammar::Sequence s = begin();
      std::string escape;
      switch (c) {
        case '"': escape = "\\\""; break;
        case '\\': escape = "\\\\"; break;
        case '\n': escape = "\\n"; break;
        case '\t': escape = "\\t"; break;
        case '\r': escape = "\\r"; break;
        case '\b': escape = "\\b"; break;
        case '\f': escape = "\\f"; break;
        default: {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
          escape = buffer;
        }
      }
      for (const auto& e : grammar.literal(escape)) s.push_back(e);
      alternatives.push_back(std::move(s));
    }
    if (last < 0x80) continue;
    for (const auto& sequence : utf8_byte_ranges(std::max<uint32_t>(first, 0x80), last)) {
      Grammar::Sequence s = begin();
      for (const auto& [lo, hi] : sequence) {
        ByteSet set;
        for (uint32_t b = lo; b <= hi; ++b) set.set(b);
        s.push_back(grammar.bytes(set));
      }
      alternatives.push_back(std::move(s));
    }
  }
  if (plain.any()) {
    Grammar::Sequence s = begin();
    s.push_back(grammar.bytes(plain));
    alternatives.insert(alternatives.begin(), std::move(s));
  }
  return grammar.rule_of(std::move(alternatives));
}

}  // namespace tokenmill::engine
