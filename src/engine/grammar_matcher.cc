#include "engine/grammar_matcher.h"

#include <algorithm>
#include <cstring>

namespace tokenmill::engine {

using Kind = GrammarElement::Kind;

// Expands one working stack depth first into every stack whose top is at a byte element,
// appending them to `out`. The working stack is changed and restored around each branch,
// so no branch copies a stack until it reaches a byte.
class GrammarMatcher::Expander {
 public:
  // The working vectors are kept per thread, so a step allocates nothing once warm.
  Expander(const Grammar& grammar, StackSet& out) : stack(scratch().stack), grammar_(grammar), out_(out) {}

  std::vector<Frame>& stack;

  // The top frame was just moved to its next element (or pushed at its first).
  void expand() {
    if (--budget_ < 0) return;
    Frame& top = stack.back();
    const Grammar::Sequence& sequence = grammar_.alternatives(top.rule)[top.alternative];
    if (static_cast<size_t>(top.position) == sequence.size()) return finish_top();
    const GrammarElement& e = sequence[top.position];
    switch (e.kind) {
      case Kind::kBytes:
        emit();
        return;
      case Kind::kRule:
        return call(e.id);
      case Kind::kRepeat:
        return offer_repeat(e);
      case Kind::kCount: {
        const int32_t saved = top.count;
        stack.back().count = 0;
        call(e.id);
        stack.back().count = saved;
        return;
      }
      case Kind::kMark:
        return mark(e.id);
    }
  }

 private:
  // The top frame's alternative is done: back in its caller, or the root has ended.
  void finish_top() {
    const Frame done = stack.back();
    stack.pop_back();
    if (stack.empty()) {
      out_.accepted = true;
    } else {
      returned();
    }
    stack.push_back(done);
  }

  // A callee of the top frame has ended; the top is at the element that called it.
  void returned() {
    Frame& top = stack.back();
    const GrammarElement& e = grammar_.alternatives(top.rule)[top.alternative][top.position];
    if (e.kind == Kind::kRepeat) return offer_repeat(e);
    if (e.kind == Kind::kCount && top.count < e.min) return;
    advance_top();
  }

  void advance_top() {
    Frame& top = stack.back();
    const Frame saved = top;
    ++top.position;
    top.count = 0;
    expand();
    stack.back() = saved;
  }

  // Every alternative of rule r, called from the top frame.
  void call(int32_t r) {
    if (stack.size() >= kMaxDepth) return;
    const auto n = static_cast<int32_t>(grammar_.alternatives(r).size());
    for (int32_t a = 0; a < n; ++a) {
      stack.push_back(Frame{r, a, 0, 0});
      expand();
      stack.pop_back();
    }
  }

  // At a repeat with top.count iterations begun: one more, or on past it.
  void offer_repeat(const GrammarElement& e) {
    Frame& top = stack.back();
    const int32_t done = top.count;
    if (done < e.max) {
      top.count = done + 1;
      call(e.id);
      stack.back().count = done;
    }
    if (done >= e.min) advance_top();
  }

  // One more mark for the innermost count() of this counter below the top.
  void mark(int32_t counter) {
    for (size_t i = stack.size() - 1; i-- > 0;) {
      Frame& f = stack[i];
      const GrammarElement& e = grammar_.alternatives(f.rule)[f.alternative][f.position];
      if (e.kind != Kind::kCount || e.counter != counter) continue;
      if (f.count >= e.max) return;  // one too many: this parse ends here
      ++f.count;
      advance_top();
      --stack[i].count;
      return;
    }
    advance_top();  // no count() of this counter is open: the mark counts for nothing
  }

  // sum += marks, saturating at kManyMarks (both at most kManyMarks: no overflow).
  static void add_marks(int64_t& sum, int64_t marks) { sum = std::min(Grammar::kManyMarks, sum + marks); }

  // Whether the innermost count() of each counter on the stack can still end within its
  // bounds: the marks it holds, and the fewest / the most the rest of the parse writes.
  bool within_counts() const {
    int32_t checked[8];
    int n_checked = 0;
    for (size_t i = stack.size() - 1; i-- > 0;) {
      const Frame& f = stack[i];
      const GrammarElement& e = grammar_.alternatives(f.rule)[f.alternative][f.position];
      if (e.kind != Kind::kCount) continue;
      if (std::find(checked, checked + n_checked, e.counter) != checked + n_checked) continue;
      if (n_checked < 8) checked[n_checked++] = e.counter;
      int64_t fewest = 0, most = 0;
      for (size_t k = i + 1; k < stack.size(); ++k) {
        const Frame& g = stack[k];
        const Grammar::Sequence& s = grammar_.alternatives(g.rule)[g.alternative];
        const GrammarElement& at = s[g.position];
        if (k + 1 < stack.size() && at.kind == Kind::kRepeat) {  // iterations after the one under way
          GrammarElement left = at;
          left.min = std::max(0, at.min - g.count);
          left.max = at.max == Grammar::kUnbounded ? at.max : at.max - g.count;
          add_marks(fewest, grammar_.element_marks(left, e.counter, false));
          add_marks(most, grammar_.element_marks(left, e.counter, true));
        }
        for (size_t p = static_cast<size_t>(g.position) + 1; p < s.size(); ++p) {
          add_marks(fewest, grammar_.element_marks(s[p], e.counter, false));
          add_marks(most, grammar_.element_marks(s[p], e.counter, true));
        }
      }
      if (f.count + fewest > e.max || f.count + most < e.min) return false;
    }
    return true;
  }

  // The stack's top is at a byte: keep a copy, normalized, unless an equal stack is kept
  // already or it cannot end within a count.
  void emit() {
    if (out_.ends.size() >= kMaxStacks || !within_counts()) return;
    std::vector<Frame>& normalized_ = scratch().normalized;
    normalized_.assign(stack.begin(), stack.end());
    normalize_below_top(normalized_);
    uint64_t hash = 1469598103934665603ull;
    for (const Frame& f : normalized_) {
      const uint64_t words[2] = {(static_cast<uint64_t>(static_cast<uint32_t>(f.rule)) << 32) | static_cast<uint32_t>(f.position),
                                 (static_cast<uint64_t>(static_cast<uint32_t>(f.alternative)) << 32) |
                                     static_cast<uint32_t>(f.count)};
      for (uint64_t w : words) hash = (hash ^ w) * 1099511628211ull;
    }
    for (size_t i = 0; i < out_.ends.size(); ++i) {
      if (out_.hashes[i] != hash) continue;
      const uint32_t begin = i == 0 ? 0 : out_.ends[i - 1];
      if (out_.ends[i] - begin == normalized_.size() &&
          std::equal(normalized_.begin(), normalized_.end(), out_.frames.begin() + begin)) {
        return;
      }
    }
    out_.frames.insert(out_.frames.end(), normalized_.begin(), normalized_.end());
    out_.ends.push_back(static_cast<uint32_t>(out_.frames.size()));
    out_.hashes.push_back(hash);
  }

  // Below the top, a frame at an unbounded repeat (count: iterations begun) or count
  // (count: marks) past its minimum acts the same whatever its count: offer_repeat()
  // offers another iteration and the way on, returned() lets a count end, mark() never
  // reaches kUnbounded, and within_counts() sees no bound to break. Setting the count to
  // the minimum makes equal states compare equal.
  void normalize_below_top(std::vector<Frame>& frames) const {
    for (size_t i = 0; i + 1 < frames.size(); ++i) {
      Frame& f = frames[i];
      const GrammarElement& e = grammar_.alternatives(f.rule)[f.alternative][f.position];
      if ((e.kind == Kind::kRepeat || e.kind == Kind::kCount) && e.max == Grammar::kUnbounded && f.count > e.min) {
        f.count = e.min;
      }
    }
  }

  const Grammar& grammar_;
  StackSet& out_;
  struct Scratch {
    std::vector<Frame> stack, normalized;
  };
  static Scratch& scratch() {
    thread_local Scratch s;
    return s;
  }
  int budget_ = kMaxExpansions;
};

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  Expander expander(*grammar_, state_);
  const auto n = static_cast<int32_t>(grammar_->alternatives(grammar_->root).size());
  for (int32_t a = 0; a < n; ++a) {
    expander.stack.assign(1, Frame{grammar_->root, a, 0, 0});
    expander.expand();
  }
  refresh_first_bytes();
}

void GrammarMatcher::step(const StackSet& from, unsigned char b, StackSet& next) const {
  next.clear();
  Expander expander(*grammar_, next);
  for (size_t i = 0; i < from.ends.size(); ++i) {
    const uint32_t begin = i == 0 ? 0 : from.ends[i - 1];
    const Frame& top = from.frames[from.ends[i] - 1];
    const GrammarElement& e = grammar_->alternatives(top.rule)[top.alternative][top.position];
    if (!grammar_->byte_set(e.id).test(b)) continue;
    expander.stack.assign(from.frames.begin() + begin, from.frames.begin() + from.ends[i]);
    ++expander.stack.back().position;
    expander.expand();
  }
}

bool GrammarMatcher::allows(std::string_view text) const {
  if (text.empty()) return true;
  if (!first_bytes_.test(static_cast<unsigned char>(text[0]))) return false;
  // Scratch sets kept per thread: a candidate token costs no allocation.
  thread_local StackSet a, b;
  const StackSet* from = &state_;
  for (char c : text) {
    StackSet& next = from == &a ? b : a;
    step(*from, static_cast<unsigned char>(c), next);
    if (next.ends.empty() && !next.accepted) return false;
    from = &next;
  }
  return true;
}

void GrammarMatcher::advance(std::string_view text) {
  StackSet next;
  for (char c : text) {
    step(state_, static_cast<unsigned char>(c), next);
    std::swap(state_, next);
  }
  refresh_first_bytes();
}

uint64_t GrammarMatcher::StackSet::hash() const {
  uint64_t h = accepted ? 0x9e3779b97f4a7c15ull : 1469598103934665603ull;
  for (uint64_t stack_hash : hashes) h = (h ^ stack_hash) * 1099511628211ull;
  return h;
}

void GrammarMatcher::refresh_first_bytes() {
  first_bytes_.reset();
  for (uint32_t end : state_.ends) {
    const Frame& top = state_.frames[end - 1];
    first_bytes_ |= grammar_->byte_set(grammar_->alternatives(top.rule)[top.alternative][top.position].id);
  }
}

}  // namespace tokenmill::engine
