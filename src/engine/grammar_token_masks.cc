#include "engine/grammar_token_masks.h"

#include <algorithm>

namespace tokenmill::engine {

GrammarTokenMasks::GrammarTokenMasks(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
                                     size_t max_states)
    : trie_(std::move(trie)), stepper_(std::move(grammar)), max_states_(max_states) {}

void GrammarTokenMasks::forget_masks() {
  std::fill(mask_of_.begin(), mask_of_.end(), -1);
  masks_.clear();
  mask_bytes_ = 0;
}

void GrammarTokenMasks::forget_all() {
  forget_masks();
  states_.clear();
  ids_.clear();
  next_.clear();
  mask_of_.clear();
}

int32_t GrammarTokenMasks::find(const GrammarMatcher::StackSet& state, uint64_t hash) const {
  if (state.ends.empty() && !state.accepted) return kDead;
  for (auto [it, end] = ids_.equal_range(hash); it != end; ++it) {
    if (states_[static_cast<size_t>(it->second)] == state) return it->second;
  }
  return kUnknown;
}

int32_t GrammarTokenMasks::intern(GrammarMatcher::StackSet&& state) {
  const uint64_t hash = state.hash();
  if (const int32_t known = find(state, hash); known != kUnknown) return known;
  const auto id = static_cast<int32_t>(states_.size());
  ByteSet first;
  const Grammar& grammar = *stepper_.grammar();
  for (uint32_t end : state.ends) {
    const GrammarMatcher::Frame& top = state.frames[end - 1];
    first |= grammar.byte_set(grammar.alternatives(top.rule)[top.alternative][top.position].id);
  }
  states_.push_back(std::move(state));
  ids_.emplace(hash, id);
  next_.resize(next_.size() + 256, kUnknown);
  for (int b = 0; b < 256; ++b) {  // a byte no parse's top allows needs no step
    if (!first.test(static_cast<size_t>(b))) next_[static_cast<size_t>(id) * 256 + static_cast<size_t>(b)] = kDead;
  }
  mask_of_.push_back(-1);
  return id;
}

int32_t GrammarTokenMasks::next(int32_t state, uint8_t byte) {
  int32_t& slot = next_[static_cast<size_t>(state) * 256 + byte];
  if (slot != kUnknown) return slot;
  stepper_.step(states_[static_cast<size_t>(state)], byte, scratch_);
  int32_t id = find(scratch_, scratch_.hash());
  if (id == kUnknown) id = intern(GrammarMatcher::StackSet(scratch_));  // may grow next_: `slot` is stale
  next_[static_cast<size_t>(state) * 256 + byte] = id;
  return id;
}

bool GrammarTokenMasks::walk(int32_t state, std::span<uint32_t> bits) {
  allowed_.clear();
  const std::vector<TokenTrie::Node>& nodes = trie_->nodes();
  path_.assign(trie_->max_depth() + 1, kDead);
  path_[0] = state;
  for (size_t i = 0; i < nodes.size();) {
    const TokenTrie::Node& node = nodes[i];
    const int32_t s = next(path_[node.depth - 1], node.byte);
    if (s == kDead) {
      i = node.subtree_end;
      continue;
    }
    if (states_.size() > 4 * max_states_) return false;
    path_[node.depth] = s;
    set_tokens(node, bits);
    if (allowed_.size() <= kMaxSparse) {
      const int32_t* tokens = trie_->tokens().data() + node.first_token;
      allowed_.insert(allowed_.end(), tokens, tokens + node.n_tokens);
    }
    ++i;
  }
  return true;
}

void GrammarTokenMasks::walk_without_automaton(const GrammarMatcher::StackSet& state, std::span<uint32_t> bits) const {
  const std::vector<TokenTrie::Node>& nodes = trie_->nodes();
  std::vector<GrammarMatcher::StackSet> path(trie_->max_depth() + 1);
  path[0] = state;
  for (size_t i = 0; i < nodes.size();) {
    const TokenTrie::Node& node = nodes[i];
    GrammarMatcher::StackSet& after = path[node.depth];
    stepper_.step(path[node.depth - 1], node.byte, after);
    if (after.ends.empty() && !after.accepted) {
      i = node.subtree_end;
      continue;
    }
    set_tokens(node, bits);
    ++i;
  }
}

void GrammarTokenMasks::set_tokens(const TokenTrie::Node& node, std::span<uint32_t> bits) const {
  const std::vector<int32_t>& tokens = trie_->tokens();
  for (uint32_t k = 0; k < node.n_tokens; ++k) {
    const auto id = static_cast<uint32_t>(tokens[node.first_token + k]);
    bits[id / 32] |= 1u << (id % 32);
  }
}

void GrammarTokenMasks::fill(const GrammarMatcher& matcher, std::span<uint32_t> bits) {
  std::lock_guard lock(mutex_);
  if (states_.size() >= max_states_) forget_all();
  if (mask_bytes_ >= kMaxMaskBytes) forget_masks();
  int32_t state = find(matcher.state(), matcher.state().hash());
  if (state == kUnknown) state = intern(GrammarMatcher::StackSet(matcher.state()));
  std::fill(bits.begin(), bits.end(), 0u);
  if (state == kDead) return;
  if (const int32_t known = mask_of_[static_cast<size_t>(state)]; known >= 0) {
    const Mask& mask = masks_[static_cast<size_t>(known)];
    if (mask.dense.empty()) {
      for (int32_t id : mask.sparse) bits[static_cast<size_t>(id) / 32] |= 1u << (id % 32);
    } else {
      std::copy(mask.dense.begin(), mask.dense.end(), bits.begin());
    }
    return;
  }
  if (!walk(state, bits)) {  // a grammar of too many states to learn: walk its parses
    forget_all();
    ++walks_without_automaton_;
    std::fill(bits.begin(), bits.end(), 0u);
    walk_without_automaton(matcher.state(), bits);
    return;
  }
  Mask mask;
  if (allowed_.size() <= kMaxSparse) {
    mask.sparse = allowed_;
    mask_bytes_ += allowed_.size() * sizeof(int32_t);
  } else {
    mask.dense.assign(bits.begin(), bits.end());
    mask_bytes_ += bits.size() * sizeof(uint32_t);
  }
  mask_of_[static_cast<size_t>(state)] = static_cast<int32_t>(masks_.size());
  masks_.push_back(std::move(mask));
}

}  // namespace tokenmill::engine
