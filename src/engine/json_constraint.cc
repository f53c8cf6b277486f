#include "engine/json_constraint.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tokenmill::engine {

bool mask_to_json(const JsonGrammar& grammar, std::span<const float> logits, const tokenizer::Tokenizer& tokenizer,
                  std::vector<float>& masked) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const auto n = static_cast<int32_t>(logits.size());
  masked.assign(logits.size(), kNegInf);
  auto allowed = [&](int32_t id) {
    const std::string& piece = tokenizer.token_piece(id, /*render_special=*/false);
    return !piece.empty() && grammar.allows(piece);
  };
  float best = kNegInf;
  for (float v : logits) best = std::max(best, v);
  // The candidates near the top, best first (ties by id: a fixed order).
  std::vector<int32_t> candidates;
  for (int32_t id = 0; id < n; ++id) {
    if (logits[id] >= best - kJsonLogitWindow) candidates.push_back(id);
  }
  auto better = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  if (candidates.size() > kJsonMaxCandidates) {
    std::nth_element(candidates.begin(), candidates.begin() + kJsonMaxCandidates, candidates.end(), better);
    candidates.resize(kJsonMaxCandidates);
  }
  std::sort(candidates.begin(), candidates.end(), better);
  size_t n_allowed = 0;
  for (int32_t id : candidates) {
    if (!allowed(id)) continue;
    masked[id] = logits[id];
    if (++n_allowed == kJsonMaxAllowed) break;
  }
  if (n_allowed > 0) return true;
  for (int32_t id = 0; id < n; ++id) {  // nothing near the top fits: anything that does
    if (std::isfinite(logits[id]) && allowed(id)) {
      masked[id] = logits[id];
      ++n_allowed;
    }
  }
  return n_allowed > 0;
}

}  // namespace tokenmill::engine
