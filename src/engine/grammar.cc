#include "engine/grammar.h"

#include <algorithm>
#include <set>

namespace tokenmill::engine {

int32_t Grammar::add_rule() {
  rules_.emplace_back();
  return static_cast<int32_t>(rules_.size() - 1);
}

void Grammar::add_alternative(int32_t rule, Sequence sequence) {
  n_elements_ += static_cast<int64_t>(sequence.size()) + 1;
  rules_[static_cast<size_t>(rule)].push_back(std::move(sequence));
}

int32_t Grammar::rule_of(std::vector<Sequence> alternatives) {
  const int32_t r = add_rule();
  for (Sequence& s : alternatives) add_alternative(r, std::move(s));
  return r;
}

GrammarElement Grammar::bytes(const ByteSet& set) {
  auto [it, fresh] = byte_set_ids_.try_emplace(set, static_cast<int32_t>(byte_sets_.size()));
  if (fresh) byte_sets_.push_back(set);
  return {GrammarElement::Kind::kBytes, it->second, 0, 0, 0};
}

GrammarElement Grammar::byte(unsigned char b) {
  ByteSet set;
  set.set(b);
  return bytes(set);
}

Grammar::Sequence Grammar::literal(std::string_view text) {
  Sequence s;
  s.reserve(text.size());
  for (char c : text) s.push_back(byte(static_cast<unsigned char>(c)));
  return s;
}

int64_t Grammar::element_marks(const GrammarElement& e, int32_t counter, bool most) const {
  auto of = [&](int32_t rule) { return most ? max_marks(rule, counter) : min_marks(rule, counter); };
  switch (e.kind) {
    case GrammarElement::Kind::kBytes: return 0;
    case GrammarElement::Kind::kMark: return e.id == counter ? 1 : 0;
    case GrammarElement::Kind::kRule: return of(e.id);
    case GrammarElement::Kind::kCount: return e.counter == counter ? 0 : of(e.id);
    case GrammarElement::Kind::kRepeat: {
      const int64_t one = of(e.id), times = most ? e.max : e.min;
      if (one == 0 || times == 0) return 0;
      if (times == kUnbounded || one >= kManyMarks / times) return kManyMarks;  // no overflow
      return times * one;
    }
  }
  return 0;
}

void Grammar::compute_mark_bounds() {
  // Each counter's count() rules, then every rule reachable from them.
  std::vector<std::pair<int32_t, int32_t>> counts;  // (counter, rule)
  for (const auto& alternatives : rules_) {
    for (const Sequence& s : alternatives) {
      for (const GrammarElement& e : s) {
        if (e.kind == GrammarElement::Kind::kCount) counts.emplace_back(e.counter, e.id);
      }
    }
  }
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  for (size_t first = 0; first < counts.size();) {
    const int32_t counter = counts[first].first;
    std::vector<int32_t> reachable;
    std::set<int32_t> seen;
    for (; first < counts.size() && counts[first].first == counter; ++first) {
      if (seen.insert(counts[first].second).second) reachable.push_back(counts[first].second);
    }
    for (size_t i = 0; i < reachable.size(); ++i) {
      for (const Sequence& s : rules_[static_cast<size_t>(reachable[i])]) {
        for (const GrammarElement& e : s) {
          if (e.kind != GrammarElement::Kind::kBytes && e.kind != GrammarElement::Kind::kMark && seen.insert(e.id).second) {
            reachable.push_back(e.id);
          }
        }
      }
    }
    auto key = [&](int32_t rule) { return (static_cast<int64_t>(counter) << 32) | static_cast<uint32_t>(rule); };
    // Fewest: shortest derivations from "cannot end" down. Most: longest ones from 0 up;
    // a rule still growing after as many passes as rules lies on a cycle that writes
    // marks, so it has no bound.
    for (bool most : {false, true}) {
      std::unordered_map<int64_t, int64_t>& bound = most ? max_marks_ : min_marks_;
      for (int32_t r : reachable) bound[key(r)] = most ? 0 : kManyMarks;
      bool changed = true;
      for (size_t pass = 0; changed; ++pass) {
        changed = false;
        for (int32_t r : reachable) {
          int64_t best = most ? 0 : kManyMarks;
          for (const Sequence& s : rules_[static_cast<size_t>(r)]) {
            int64_t sum = 0;
            for (const GrammarElement& e : s) sum = std::min(kManyMarks, sum + element_marks(e, counter, most));
            best = most ? std::max(best, sum) : std::min(best, sum);
          }
          int64_t& now = bound[key(r)];
          if (most && pass > reachable.size()) best = best > now ? kManyMarks : best;
          if (most ? best > now : best < now) {
            now = best;
            changed = true;
          }
        }
      }
    }
  }
}

}  // namespace tokenmill::engine
