// Near-duplicate texts by MinHash: each text's set of word 3-grams (lowercased; a text
// of fewer words is one gram) is summarized by kHashes minimum hashes, whose share of
// equal values estimates the Jaccard similarity of two sets; an index of bands
// (kBands x kRows hashes) finds the candidates, so each new text is compared with few
// of those kept.
//
// Thread-safety: none.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tokenmill::dataset {

class NearDuplicates {
 public:
  static constexpr int kHashes = 64;
  static constexpr int kBands = 16;
  static constexpr int kRows = kHashes / kBands;
  using Signature = std::array<uint64_t, kHashes>;

  // threshold: the estimated Jaccard similarity at which a text is a near duplicate.
  explicit NearDuplicates(double threshold) : threshold_(threshold) {}

  static Signature signature(std::string_view text);
  static double similarity(const Signature& a, const Signature& b);

  // True when text is a near duplicate of a text added before; otherwise adds it.
  bool seen_or_add(std::string_view text);

 private:
  double threshold_;
  std::vector<Signature> kept_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> bands_;  // band key -> indexes into kept_
};

}  // namespace tokenmill::dataset
