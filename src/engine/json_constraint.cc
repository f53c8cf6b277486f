#include "engine/json_constraint.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/first_max.h"
#include "engine/grammar_token_masks.h"

namespace tokenmill::engine {

std::shared_ptr<const TokenTrie> token_trie_of(const tokenizer::Tokenizer& tokenizer) {
  std::vector<std::string> pieces;
  pieces.reserve(static_cast<size_t>(tokenizer.n_vocab()));
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id) pieces.push_back(tokenizer.token_piece(id, /*render_special=*/false));
  return std::make_shared<const TokenTrie>(pieces);
}

bool mask_to_json(const OutputGrammar& grammar, std::span<const float> logits, const tokenizer::Tokenizer& tokenizer,
                  bool greedy_only, std::vector<float>& masked, const TokenTrieSource& trie_source) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const auto n = static_cast<int32_t>(logits.size());
  masked.assign(logits.size(), kNegInf);
  const bool may_end = grammar.accepts_end();
  auto allowed = [&](int32_t id) {
    const std::string& piece = tokenizer.token_piece(id, /*render_special=*/false);
    if (piece.empty()) return may_end && tokenizer.is_end_of_generation(id);
    return grammar.allows(piece);
  };
  const int32_t best_id = first_max_index(logits);
  const float best = n > 0 ? logits[best_id] : kNegInf;
  if (greedy_only && std::isfinite(best) && allowed(best_id)) {  // the usual case: the model writes JSON
    masked[best_id] = best;
    return true;
  }
  if (!std::isfinite(best)) return false;  // nothing a sampler could draw
  // The candidates near the top, best first (ties by id: a fixed order): one pass keeps
  // the tokens within the window; where they are more than kJsonMaxCandidates, a
  // histogram of those (kBins bins) finds the lowest bin edge with at most that many
  // above it, so no pass sorts or selects among the whole vocabulary.
  const float low = best - kJsonLogitWindow;
  // Branch-free: every id is written, the count moves only past the ones kept.
  thread_local std::vector<int32_t> kept;
  kept.resize(static_cast<size_t>(n) + 1);
  int32_t n_kept = 0;
  for (int32_t id = 0; id < n; ++id) {
    kept[n_kept] = id;
    n_kept += logits[id] >= low;
  }
  std::vector<int32_t> candidates(kept.begin(), kept.begin() + n_kept);
  if (candidates.size() > kJsonMaxCandidates) {
    constexpr int kBins = 512;
    const float bin_width = kJsonLogitWindow / kBins;
    std::vector<int32_t> counts(kBins + 1, 0);
    for (int32_t id : candidates) ++counts[std::min(kBins, static_cast<int>((logits[id] - low) / bin_width))];
    int edge = kBins + 1;  // tokens in bins >= edge are candidates
    for (size_t above = 0; edge > 0 && above + counts[edge - 1] <= kJsonMaxCandidates;) above += counts[--edge];
    if (edge == kBins + 1) edge = kBins;  // the top bin alone is over the cap: take it anyway
    const float cut = low + static_cast<float>(edge) * bin_width;
    std::erase_if(candidates, [&](int32_t id) { return logits[id] < cut && id != best_id; });  // cut may round above the best
  }
  auto better = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::sort(candidates.begin(), candidates.end(), better);
  size_t n_allowed = 0;
  for (int32_t id : candidates) {
    if (!allowed(id)) continue;
    masked[id] = logits[id];
    if (++n_allowed == (greedy_only ? 1 : kJsonMaxAllowed)) break;
  }
  if (n_allowed > 0) return true;
  // Nothing near the top fits: anything that does.
  thread_local std::vector<uint32_t> bits;
  bits.resize(GrammarTokenMasks::words(n));
  const std::shared_ptr<const TokenTrie> trie = trie_source ? trie_source() : nullptr;
  if (trie != nullptr && trie->n_vocab() == n && grammar.fill_token_mask(trie, bits)) {
    for (int32_t id = 0; id < n; ++id) {
      const bool in_grammar = (bits[static_cast<size_t>(id) / 32] >> (id % 32)) & 1u;
      if (std::isfinite(logits[id]) && (in_grammar || (may_end && tokenizer.is_end_of_generation(id) &&
                                                       tokenizer.token_piece(id, false).empty()))) {
        masked[id] = logits[id];
        ++n_allowed;
      }
    }
    return n_allowed > 0;
  }
  for (int32_t id = 0; id < n; ++id) {
    if (std::isfinite(logits[id]) && allowed(id)) {
      masked[id] = logits[id];
      ++n_allowed;
    }
  }
  return n_allowed > 0;
}

}  // namespace tokenmill::engine
