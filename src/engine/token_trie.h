// The vocabulary as a trie of token bytes, for masks over the whole vocabulary
// (engine/grammar_token_masks.h): one node per distinct token prefix, in preorder, so a
// walk that finds a prefix refused skips its whole subtree in one jump.
//
// Thread-safety: built once, then immutable and shared.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tokenmill::engine {

class TokenTrie {
 public:
  struct Node {
    uint32_t subtree_end = 0;  // the first node after this one's subtree
    uint32_t first_token = 0;  // tokens()[first_token, first_token + n_tokens) end here
    uint32_t n_tokens = 0;
    uint16_t depth = 0;        // 1 for a first byte; the parent is the closest node before of depth - 1
    uint8_t byte = 0;
  };

  // pieces[i] = the bytes of token i; an empty piece is left out (it never matches).
  explicit TokenTrie(std::span<const std::string> pieces);

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  int32_t n_vocab() const { return n_vocab_; }
  size_t max_depth() const { return max_depth_; }

 private:
  std::vector<Node> nodes_;
  std::vector<int32_t> tokens_;  // token ids by node, in preorder
  int32_t n_vocab_ = 0;
  size_t max_depth_ = 0;
};

}  // namespace tokenmill::engine
