// What a constrained output may continue with, byte by byte: JSON mode's one JSON object
// (engine/json_grammar.h) or a value of a JSON schema (engine/json_schema.h). The sampler
// masks every token whose text the grammar does not allow (engine/json_constraint.h), and
// a choice ends when the grammar is complete.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tokenmill::engine {

class TokenTrie;

// Where a grammar writes fixed text (a literal) that holds special tokens' texts (e.g.
// harmony's "<|end|>"), those must come as the tokens, not spelled out in plain pieces
// that the model never saw there. False when `literal` begins with one of `whole` and
// `rest` (the rest of one token's text, from the literal's position on) does not.
inline bool splits_whole_token(std::string_view literal, std::string_view rest, const std::vector<std::string>& whole) {
  for (const std::string& w : whole) {
    if (literal.starts_with(w) && !rest.starts_with(w)) return true;
  }
  return false;
}

class OutputGrammar {
 public:
  virtual ~OutputGrammar() = default;
  // True if every byte of text is allowed next (the state is not changed).
  virtual bool allows(std::string_view text) const = 0;
  // Feeds text. REQUIRES: allows(text).
  virtual void advance(std::string_view text) = 0;
  // The value is complete: nothing but the end may follow.
  virtual bool complete() const = 0;
  // The output may end here (an end-of-generation token is allowed) though it need not:
  // a grammar that constrains only part of the output (engine/tool_call_grammar.h).
  virtual bool accepts_end() const { return false; }
  // A copy in the same state (speculation checks drafts on one).
  virtual std::unique_ptr<OutputGrammar> clone() const = 0;
  // bits = every token of `trie`'s vocabulary whose piece allows() takes, as
  // engine/grammar_token_masks.h lays them out. Returns false where the grammar cannot
  // (the caller then asks allows() token by token).
  virtual bool fill_token_mask(const std::shared_ptr<const TokenTrie>& /*trie*/, std::span<uint32_t> /*bits*/) const {
    return false;
  }
};

}  // namespace tokenmill::engine
