#include "engine/grammar.h"

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

}  // namespace tokenmill::engine
