// Constrained sampling for JSON mode and JSON schemas: the logits a sampler may draw from
// when the output must stay in a grammar (engine/output_grammar.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/output_grammar.h"
#include "engine/token_trie.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::engine {

// masked = logits with every token the grammar does not allow next set to -inf (tokens
// with an empty piece, control tokens among them, are never allowed, but for the
// end-of-generation ones where the grammar accepts_end()). Only the tokens
// within kJsonLogitWindow of the largest logit are tried, best first, until
// kJsonMaxAllowed are found; all others are -inf too (together they weigh less than
// e^-kJsonLogitWindow (1e-7) of the best one each). If none of
// those is allowed, every token is tried: by the grammar's whole-vocabulary mask over
// the trie `trie()` returns (asked for only then: it may be built on first need) where
// the grammar has one (engine/grammar_token_masks.h), else token by token. greedy_only: only the best allowed token is
// needed (a temperature-0 draw without penalties); the search stops there, and when the
// most likely token is allowed it is the only one looked at. Returns false when no
// token is allowed.
inline constexpr float kJsonLogitWindow = 16.0f;
inline constexpr size_t kJsonMaxCandidates = 1024;
inline constexpr size_t kJsonMaxAllowed = 256;
// REQUIRES: trie, where given, returns a trie of tokenizer's pieces (token_trie_of).
using TokenTrieSource = std::function<std::shared_ptr<const TokenTrie>()>;
bool mask_to_json(const OutputGrammar& grammar, std::span<const float> logits, const tokenizer::Tokenizer& tokenizer,
                  bool greedy_only, std::vector<float>& masked, const TokenTrieSource& trie = nullptr);

// The trie of the tokenizer's pieces as constrained output reads them (control tokens'
// pieces empty).
std::shared_ptr<const TokenTrie> token_trie_of(const tokenizer::Tokenizer& tokenizer);

}  // namespace tokenmill::engine
