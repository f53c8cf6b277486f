// Constrained sampling for JSON mode: the logits a sampler may draw from when the output
// must stay a valid JSON object (engine/json_grammar.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/json_grammar.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::engine {

// masked = logits with every token the grammar does not allow next set to -inf (tokens
// with an empty piece, control tokens among them, are never allowed). Only the tokens
// within kJsonLogitWindow of the largest logit are tried, best first, until
// kJsonMaxAllowed are found; all others are -inf too (together they weigh less than
// e^-kJsonLogitWindow of the best one each: nothing a sampler would draw). If none of
// those is allowed, every token is tried. Returns false when no token is allowed.
inline constexpr float kJsonLogitWindow = 30.0f;
inline constexpr size_t kJsonMaxCandidates = 4096;
inline constexpr size_t kJsonMaxAllowed = 256;
bool mask_to_json(const JsonGrammar& grammar, std::span<const float> logits, const tokenizer::Tokenizer& tokenizer,
                  std::vector<float>& masked);

}  // namespace tokenmill::engine
