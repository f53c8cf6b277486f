// Which tokens of the whole vocabulary a grammar allows next, as a bitmask: bit i of
// word i / 32 is token i. The answer is exactly GrammarMatcher::allows(piece) for every
// token with a non-empty piece (those with an empty piece are 0: the caller decides the
// end-of-generation ones).
//
// How it is fast: the matcher's states (sets of normalized parse stacks) become the
// states of an automaton built lazily over bytes, each transition computed once by the
// matcher's own step; a mask is one walk of the vocabulary trie over that automaton,
// skipping the subtree of every refused prefix, and is kept per state. Inside a free
// string the state is the same after every character, so a walk's masks are mostly
// copies of one computed before.
//
// Memory is bounded: at most kMaxStates states (each with a 256-entry transition row) and
// kMaxMaskBytes of masks are kept between calls; past the first, everything learnt is
// dropped and learnt again, past the second the masks. A walk that would learn more than 4 × kMaxStates states (a grammar
// with many counted positions) finishes by stepping the parse sets themselves.
//
// Thread-safety: fill() may be called from many threads; they take turns.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/grammar_matcher.h"
#include "engine/token_trie.h"

namespace tokenmill::engine {

class GrammarTokenMasks {
 public:
  static constexpr size_t kMaxStates = 4096;
  static constexpr size_t kMaxMaskBytes = size_t{8} << 20;

  // max_states: kMaxStates, or fewer (tests reach the fallback with it).
  GrammarTokenMasks(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
                    size_t max_states = kMaxStates);

  static size_t words(int32_t n_vocab) { return (static_cast<size_t>(n_vocab) + 31) / 32; }
  // bits = the tokens allowed after what `matcher` has read.
  // REQUIRES: matcher runs this grammar; bits.size() == words(trie's n_vocab).
  void fill(const GrammarMatcher& matcher, std::span<uint32_t> bits);

  const std::shared_ptr<const TokenTrie>& trie() const { return trie_; }
  // How many masks were computed without the automaton (it had grown too large).
  size_t walks_without_automaton() const { return walks_without_automaton_; }

 private:
  static constexpr int32_t kDead = -1;     // no parse is left
  static constexpr int32_t kUnknown = -2;  // not computed yet

  // The state's id, kDead, or kUnknown where it has none yet.
  int32_t find(const GrammarMatcher::StackSet& state, uint64_t hash) const;
  int32_t intern(GrammarMatcher::StackSet&& state);
  int32_t next(int32_t state, uint8_t byte);
  // The trie walk over the automaton; false if it grew past 4 × max_states_ states.
  // The allowed ids are also left in allowed_ while they are at most kMaxSparse.
  bool walk(int32_t state, std::span<uint32_t> bits);
  // The same walk stepping parse sets directly: slow, but no state is kept.
  void walk_without_automaton(const GrammarMatcher::StackSet& state, std::span<uint32_t> bits) const;
  void set_tokens(const TokenTrie::Node& node, std::span<uint32_t> bits) const;
  void forget_masks();
  void forget_all();

  std::shared_ptr<const TokenTrie> trie_;
  GrammarMatcher stepper_;  // its step() moves between states; its own state is unused
  size_t max_states_;
  std::mutex mutex_;
  std::vector<GrammarMatcher::StackSet> states_;
  std::unordered_multimap<uint64_t, int32_t> ids_;  // StackSet::hash() -> state
  std::vector<int32_t> next_;                       // [state * 256 + byte]
  std::vector<int32_t> mask_of_;                    // [state] -> index in masks_, or -1
  // A mask kept: the allowed ids where they are few, else the bitmask.
  static constexpr size_t kMaxSparse = 2048;
  struct Mask {
    std::vector<int32_t> sparse;
    std::vector<uint32_t> dense;
  };
  std::vector<Mask> masks_;
  size_t mask_bytes_ = 0;
  GrammarMatcher::StackSet scratch_;  // a step's result before it is known to be new
  std::vector<int32_t> allowed_;
  std::vector<int32_t> path_;                       // the walk's state per depth
  size_t walks_without_automaton_ = 0;
};

}  // namespace tokenmill::engine
