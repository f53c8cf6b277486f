#include "engine/reasoning_grammar.h"

#include <string_view>
#include <utility>

namespace tokenmill::engine {

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// Whether needle occurs in the concatenation of a and b, without building it (allows()
// runs once per vocabulary entry when a mask is computed).
bool contains_across(std::string_view a, std::string_view b, std::string_view needle) {
  if (a.find(needle) != std::string_view::npos || b.find(needle) != std::string_view::npos) return true;
  for (size_t k = 1; k < needle.size(); ++k) {  // needle's first k bytes end a, the rest start b
    if (a.ends_with(needle.substr(0, k)) && b.starts_with(needle.substr(k))) return true;
  }
  return false;
}

}  // namespace

ReasoningGrammar::ReasoningGrammar(std::shared_ptr<const ReasoningSpec> spec, std::unique_ptr<OutputGrammar> answer)
    : spec_(std::move(spec)), answer_(std::move(answer)) {
  if (spec_->opened_by_prompt) {
    state_.phase = Phase::kReasoning;
    if (spec_->budget == 0) start_forcing();
  }
}

ReasoningGrammar::ReasoningGrammar(const ReasoningGrammar& other)
    : spec_(other.spec_),
      answer_(other.answer_ ? other.answer_->clone() : nullptr),
      state_(other.state_),
      reasoning_tokens_(other.reasoning_tokens_) {}

void ReasoningGrammar::start_forcing() {
  // The close goes on a line of its own, as the models write it (where the spec asks).
  const bool at_line_start = state_.held.empty() || state_.held.back() == '\n';
  state_.held = (at_line_start || !spec_->close_on_own_line ? "" : "\n") + spec_->close;
  state_.phase = Phase::kForcing;
}

bool ReasoningGrammar::scan(State& state, std::string_view text, size_t& answer_from, std::string& replay) const {
  const std::string& open = spec_->open;
  const std::string& close = spec_->close;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    switch (state.phase) {
      case Phase::kLead:
        if (state.held.empty() && is_space(c) && state.whitespace < kMaxReasoningGap) {
          ++state.whitespace;
          continue;
        }
        if (state.held.size() < open.size() && open[state.held.size()] == c) {
          state.held += c;
          if (state.held.size() == open.size()) {
            state.phase = Phase::kReasoning;
            state.held.clear();
          }
          continue;
        }
        // Not the open tag: the answer begins, with the part of the tag read so far.
        replay = std::move(state.held);
        state.held.clear();
        state.phase = Phase::kAnswer;
        answer_from = i;
        return true;
      case Phase::kReasoning:
        state.held += c;
        if (state.held.ends_with(close)) {
          state.phase = Phase::kGap;
          state.held.clear();
          state.whitespace = 0;
        } else if (state.held.size() >= close.size()) {
          state.held.erase(0, state.held.size() - close.size() + 1);
        }
        continue;
      case Phase::kForcing:
        if (c != state.held.front() || splits_whole_token(state.held, text.substr(i), spec_->whole_tokens)) return false;
        state.held.erase(0, 1);
        if (state.held.empty()) {
          state.phase = Phase::kGap;
          state.whitespace = 0;
        }
        continue;
      case Phase::kGap:
        if (is_space(c) && state.whitespace < spec_->max_gap) {
          ++state.whitespace;
          continue;
        }
        state.phase = Phase::kAnswer;
        answer_from = i;
        return true;
      case Phase::kAnswer:
        answer_from = i;
        return true;
    }
  }
  answer_from = text.size();
  return true;
}

bool ReasoningGrammar::allows(std::string_view text) const {
  if (state_.phase == Phase::kAnswer) return !answer_ || answer_->allows(text);
  if (state_.phase == Phase::kReasoning && !contains_across(state_.held, text, spec_->close)) {
    return true;  // the span goes on
  }
  State state = state_;
  size_t answer_from = 0;
  std::string replay;
  if (!scan(state, text, answer_from, replay)) return false;
  if (state.phase != Phase::kAnswer || !answer_) return true;
  replay.append(text.substr(answer_from));
  return replay.empty() || answer_->allows(replay);
}

void ReasoningGrammar::advance(std::string_view text) {
  if (state_.phase == Phase::kAnswer) {
    if (answer_) answer_->advance(text);
    return;
  }
  const bool inside = state_.phase == Phase::kReasoning;
  size_t answer_from = 0;
  std::string replay;
  scan(state_, text, answer_from, replay);
  if (state_.phase == Phase::kAnswer && answer_) {
    replay.append(text.substr(answer_from));
    if (!replay.empty()) answer_->advance(replay);
  }
  if (inside) ++reasoning_tokens_;
  if (state_.phase == Phase::kReasoning && spec_->budget >= 0 && reasoning_tokens_ >= spec_->budget) start_forcing();
}

bool ReasoningGrammar::complete() const {
  return state_.phase == Phase::kAnswer && answer_ && answer_->complete();
}

bool ReasoningGrammar::accepts_end() const {
  switch (state_.phase) {
    case Phase::kReasoning: return !answer_;  // with a grammar, the answer must come
    case Phase::kForcing: return false;
    default: return !answer_ || answer_->accepts_end();
  }
}

bool ReasoningGrammar::fill_token_mask(const std::shared_ptr<const TokenTrie>& trie, std::span<uint32_t> bits) const {
  return state_.phase == Phase::kAnswer && answer_ && answer_->fill_token_mask(trie, bits);
}

}  // namespace tokenmill::engine
