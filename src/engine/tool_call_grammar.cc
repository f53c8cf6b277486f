#include "engine/tool_call_grammar.h"

#include <algorithm>
#include <utility>

namespace tokenmill::engine {

namespace {

constexpr std::string_view kOpen = "{\"name\": \"";
constexpr int kMaxWhitespace = 4;  // between the trigger and the call, and before its '}'

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

}  // namespace

ToolCallGrammar::ToolCallGrammar(std::shared_ptr<const ToolCallSpec> spec) : spec_(std::move(spec)) {
  if (spec_->forced) start_call();
}

void ToolCallGrammar::start_call() {
  phase_ = Phase::kOpen;
  literal_ = spec_->header ? spec_->header->open : std::string(kOpen);
  seen_.clear();
  whitespace_ = 0;
  tool_ = nullptr;
  schema_arguments_.reset();
  any_arguments_.reset();
}

bool ToolCallGrammar::step(char c) {
  switch (phase_) {
    case Phase::kFree: {
      const std::string& trigger = spec_->trigger;
      if (trigger.empty()) return true;
      seen_ += c;
      if (seen_.size() > trigger.size()) seen_.erase(0, seen_.size() - trigger.size());
      if (seen_ == trigger) start_call();
      return true;
    }
    case Phase::kOpen:
      if (!spec_->header && literal_.size() == kOpen.size() && is_space(c) && !spec_->forced) {
        return ++whitespace_ <= kMaxWhitespace;
      }
      if (c != literal_.front()) return false;
      literal_.erase(0, 1);
      if (literal_.empty()) phase_ = Phase::kName;
      return true;
    case Phase::kName: {
      if (c == (spec_->header ? spec_->header->name_end : '"')) {
        auto it = std::find_if(spec_->tools.begin(), spec_->tools.end(),
                               [&](const ToolSchema& t) { return t.name == seen_; });
        if (it == spec_->tools.end()) return false;
        tool_ = &*it;
        phase_ = Phase::kMiddle;
        literal_ = spec_->header ? spec_->header->arguments_open : ", \"" + spec_->arguments_key + "\": ";
        return true;
      }
      seen_ += c;
      return std::any_of(spec_->tools.begin(), spec_->tools.end(),
                         [&](const ToolSchema& t) { return t.name.compare(0, seen_.size(), seen_) == 0; });
    }
    case Phase::kMiddle:
      if (c != literal_.front()) return false;
      literal_.erase(0, 1);
      if (literal_.empty()) {
        phase_ = Phase::kArguments;
        if (tool_->arguments) {
          schema_arguments_.emplace(tool_->arguments);
        } else {
          any_arguments_.emplace();
        }
      }
      return true;
    case Phase::kArguments: {
      OutputGrammar& arguments = schema_arguments_ ? static_cast<OutputGrammar&>(*schema_arguments_)
                                                   : static_cast<OutputGrammar&>(*any_arguments_);
      const std::string_view byte(&c, 1);
      if (!arguments.allows(byte)) return false;
      arguments.advance(byte);
      if (arguments.complete()) {
        whitespace_ = 0;
        if (!spec_->header) {
          phase_ = Phase::kClose;
        } else {
          phase_ = spec_->forced || spec_->single_call ? Phase::kDone : Phase::kFree;
          seen_.clear();
        }
      }
      return true;
    }
    case Phase::kClose:
      if (is_space(c)) return ++whitespace_ <= kMaxWhitespace;
      if (c != '}') return false;
      phase_ = spec_->forced || spec_->single_call ? Phase::kDone : Phase::kFree;
      seen_.clear();
      return true;
    case Phase::kDone:
      return false;
  }
  return false;
}

bool ToolCallGrammar::allows(std::string_view text) const {
  ToolCallGrammar copy = *this;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool in_literal = copy.phase_ == Phase::kOpen || copy.phase_ == Phase::kMiddle;
    if (in_literal && spec_->header && splits_whole_token(copy.literal_, text.substr(i), spec_->header->whole_tokens)) {
      return false;
    }
    if (!copy.step(text[i])) return false;
  }
  return true;
}

void ToolCallGrammar::advance(std::string_view text) {
  for (char c : text) step(c);
}

}  // namespace tokenmill::engine
