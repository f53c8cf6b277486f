#include "dataset/near_duplicates.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <string>

#include "dataset/text.h"

namespace tokenmill::dataset {

namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

NearDuplicates::Signature NearDuplicates::signature(std::string_view text) {
  const std::vector<std::string> w = lowercase_words(text);
  std::vector<uint64_t> grams;
  constexpr size_t kGram = 3;
  if (w.size() < kGram) {
    std::string joined;
    for (const std::string& s : w) joined += s + " ";
    grams.push_back(std::hash<std::string>{}(joined));
  } else {
    for (size_t i = 0; i + kGram <= w.size(); ++i) {
      grams.push_back(std::hash<std::string>{}(w[i] + " " + w[i + 1] + " " + w[i + 2]));
    }
  }
  Signature s;
  s.fill(UINT64_MAX);
  for (const uint64_t g : grams) {
    for (int i = 0; i < kHashes; ++i) s[i] = std::min(s[i], mix(g ^ mix(static_cast<uint64_t>(i) + 1)));
  }
  return s;
}

double NearDuplicates::similarity(const Signature& a, const Signature& b) {
  int equal = 0;
  for (int i = 0; i < kHashes; ++i) equal += a[i] == b[i];
  return static_cast<double>(equal) / kHashes;
}

bool NearDuplicates::seen_or_add(std::string_view text) {
  const Signature s = signature(text);
  std::array<uint64_t, kBands> keys;
  for (int b = 0; b < kBands; ++b) {
    uint64_t key = mix(static_cast<uint64_t>(b));
    for (int r = 0; r < kRows; ++r) key = mix(key ^ s[b * kRows + r]);
    keys[b] = key;
    if (auto it = bands_.find(key); it != bands_.end()) {
      for (const uint32_t index : it->second) {
        if (similarity(s, kept_[index]) >= threshold_) return true;
      }
    }
  }
  const auto index = static_cast<uint32_t>(kept_.size());
  kept_.push_back(s);
  for (const uint64_t key : keys) bands_[key].push_back(index);
  return false;
}

}  // namespace tokenmill::dataset
