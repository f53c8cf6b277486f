#include "engine/token_trie.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace tokenmill::engine {

TokenTrie::TokenTrie(std::span<const std::string> pieces) : n_vocab_(static_cast<int32_t>(pieces.size())) {
  std::vector<int32_t> order(pieces.size());
  std::iota(order.begin(), order.end(), 0);
  std::erase_if(order, [&](int32_t id) { return pieces[id].empty(); });
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return pieces[a] < pieces[b]; });
  // Sorted pieces enter the trie in preorder: each one pops the path back to the prefix it
  // shares with the one before and pushes a node per byte after it.
  std::vector<uint32_t> path;  // node indices, path[d] at depth d + 1
  const std::string* previous = nullptr;
  for (int32_t id : order) {
    const std::string& piece = pieces[id];
    if (piece.size() > std::numeric_limits<uint16_t>::max()) throw std::length_error("token piece too long");
    size_t shared = 0;
    if (previous != nullptr) {
      const size_t n = std::min(previous->size(), piece.size());
      while (shared < n && (*previous)[shared] == piece[shared]) ++shared;
    }
    while (path.size() > shared) {
      nodes_[path.back()].subtree_end = static_cast<uint32_t>(nodes_.size());
      path.pop_back();
    }
    for (size_t d = shared; d < piece.size(); ++d) {
      Node node;
      node.depth = static_cast<uint16_t>(d + 1);
      node.byte = static_cast<uint8_t>(piece[d]);
      path.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back(node);
    }
    Node& last = nodes_[path.back()];
    if (last.n_tokens == 0) last.first_token = static_cast<uint32_t>(tokens_.size());
    ++last.n_tokens;  // equal pieces are adjacent in the sorted order
    tokens_.push_back(id);
    max_depth_ = std::max(max_depth_, piece.size());
    previous = &piece;
  }
  for (uint32_t node : path) nodes_[node].subtree_end = static_cast<uint32_t>(nodes_.size());
}

}  // namespace tokenmill::engine
