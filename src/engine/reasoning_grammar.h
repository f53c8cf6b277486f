// Thinking models write a reasoning span before their answer, e.g.
//
//   <think>\n ...reasoning... \n</think>\n\n ANSWER
//
// where the template's prompt either ends inside the span (DeepSeek-R1's "<think>\n") or
// leaves the model to open it (Qwen3). A ReasoningGrammar lets the reasoning be free text
// and puts the request's grammar (JSON mode, a schema, tool calls; or none) on the
// answer alone, so that structured output and tool calls constrain what the user reads,
// never what the model thinks. With a budget it also ends the reasoning: after that many
// tokens inside the span, the only tokens allowed are those that spell "\n" + close
// (close alone at a line's start, or where the spec's close_on_own_line is false).
//
// Phases, byte by byte:
//   lead       (prompt did not open the span) whitespace, then the open tag, or else the
//              answer begins (the bytes read so far, but the whitespace, go to it)
//   reasoning  anything, until the close tag
//   forcing    the budget is spent: the bytes of "\n" + close, in order
//   gap        whitespace after the close (at most spec.max_gap bytes)
//   answer     the request's grammar, or free text without one
//
// Thread-safety: a ReasoningSpec is immutable and shared; a ReasoningGrammar is a value.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/output_grammar.h"

namespace tokenmill::engine {

inline constexpr int kMaxReasoningGap = 8;

struct ReasoningSpec {
  std::string open = "<think>";
  std::string close = "</think>";
  bool opened_by_prompt = false;  // the prompt ends inside the span
  int32_t budget = -1;            // tokens inside the span before the close is forced; < 0: none
  bool close_on_own_line = true;  // a forced close starts a line (false: harmony's, a token)
  std::vector<std::string> whole_tokens;  // in a forced close: each written as its one token
  int max_gap = kMaxReasoningGap;  // whitespace bytes between the close and the answer
};

class ReasoningGrammar final : public OutputGrammar {
 public:
  // answer: the grammar for what follows the reasoning; null: free text.
  ReasoningGrammar(std::shared_ptr<const ReasoningSpec> spec, std::unique_ptr<OutputGrammar> answer);
  ReasoningGrammar(const ReasoningGrammar& other);
  ReasoningGrammar& operator=(const ReasoningGrammar&) = delete;

  std::unique_ptr<OutputGrammar> clone() const override { return std::make_unique<ReasoningGrammar>(*this); }
  bool allows(std::string_view text) const override;
  // One call per token: the budget counts calls made inside the span.
  void advance(std::string_view text) override;
  bool complete() const override;
  bool accepts_end() const override;
  bool fill_token_mask(const std::shared_ptr<const TokenTrie>& trie, std::span<uint32_t> bits) const override;

  bool in_answer() const { return state_.phase == Phase::kAnswer; }

 private:
  enum class Phase { kLead, kReasoning, kForcing, kGap, kAnswer };
  struct State {
    Phase phase = Phase::kLead;
    // kLead: the bytes after the whitespace (a prefix of the open tag); kReasoning: the
    // last bytes, to find a close tag split over tokens; kForcing: the bytes still due.
    std::string held;
    int whitespace = 0;  // kLead / kGap: whitespace bytes so far
  };
  // Feeds text up to the answer; returns false when a byte is refused. `answer_from`:
  // where in text the answer begins (text.size() when it does not), and `replay` the
  // bytes read earlier that belong to the answer (kLead's held prefix).
  bool scan(State& state, std::string_view text, size_t& answer_from, std::string& replay) const;
  // The budget is spent: from here the close tag, on a line of its own.
  void start_forcing();

  std::shared_ptr<const ReasoningSpec> spec_;
  std::unique_ptr<OutputGrammar> answer_;
  State state_;
  int32_t reasoning_tokens_ = 0;
};

}  // namespace tokenmill::engine
