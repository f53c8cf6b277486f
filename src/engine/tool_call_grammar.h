// Function calling: the text a model writes to call one of a request's tools, as a byte
// grammar (engine/output_grammar.h), so that every call it makes names a tool it was
// given and carries arguments that parse and validate:
//
//   {"name": "NAME", "ARGUMENTS_KEY": ARGS}
//
// or, where the spec gives a header form (harmony's commentary message to a function),
//
//   HEADER.open NAME HEADER.name_end HEADER.arguments_open ARGS
//
// which ends with ARGS (the model's call token, an end of generation, is not text). NAME
// is one of the tools' names; ARGS a JSON object valid against that tool's parameters
// schema (engine/json_schema.h), or any JSON object when it has none.
//
// Forced (tool_choice "required" or a named function): the output is exactly one call,
// and the choice ends when it closes; the caller puts the model's opening syntax (e.g.
// "<tool_call>\n") at the end of the prompt. Otherwise (tool_choice "auto") the output
// is free text, which may end at any point, until it contains `trigger`; from there one
// call must follow, and after it the text is free again (a closing tag, more calls, the
// end), or, with single_call, the output ends.
//
// Thread-safety: a ToolCallSpec is immutable and shared; a ToolCallGrammar is a value.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/json_grammar.h"
#include "engine/json_schema.h"
#include "engine/output_grammar.h"

namespace tokenmill::engine {

struct ToolSchema {
  std::string name;
  std::shared_ptr<const JsonSchema> arguments;  // null: any JSON object
};

struct ToolCallSpec {
  std::vector<ToolSchema> tools;         // non-empty, distinct names
  std::string arguments_key = "arguments";  // Llama 3.1 writes "parameters"
  bool forced = false;
  std::string trigger;                   // auto: the text that opens a call, e.g. "<tool_call>"
  bool single_call = false;              // auto: the output ends with its first call
  struct Header {                // open and arguments_open are not empty
    std::string open;            // before the name
    char name_end = ' ';         // ends the name (never in a tool's name)
    std::string arguments_open;  // between name_end and the arguments
    std::vector<std::string> whole_tokens;  // in open / arguments_open: each written as its one token
  };
  std::optional<Header> header;  // null: the JSON object form
};

class ToolCallGrammar final : public OutputGrammar {
 public:
  explicit ToolCallGrammar(std::shared_ptr<const ToolCallSpec> spec);

  std::unique_ptr<OutputGrammar> clone() const override { return std::make_unique<ToolCallGrammar>(*this); }
  bool allows(std::string_view text) const override;
  void advance(std::string_view text) override;
  bool complete() const override { return phase_ == Phase::kDone; }
  bool accepts_end() const override { return phase_ == Phase::kFree; }

 private:
  enum class Phase { kFree, kOpen, kName, kMiddle, kArguments, kClose, kDone };
  // Feeds one byte; false (the state then unspecified) when it is not allowed.
  bool step(char c);
  void start_call();

  std::shared_ptr<const ToolCallSpec> spec_;
  Phase phase_ = Phase::kFree;
  std::string literal_;     // kOpen / kMiddle: the bytes still expected
  std::string seen_;        // kFree: the last bytes, to find the trigger; kName: the name so far
  int whitespace_ = 0;      // whitespace bytes in a row where some is allowed
  const ToolSchema* tool_ = nullptr;
  std::optional<JsonSchemaGrammar> schema_arguments_;
  std::optional<JsonGrammar> any_arguments_;
};

}  // namespace tokenmill::engine
