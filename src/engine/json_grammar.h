// A byte-level recognizer for one JSON object, for constrained generation
// (response_format {"type": "json_object"}, Ollama's format "json"): it says which byte
// strings may extend what was generated so far and still lead to a valid JSON text, and
// when the object is complete.
//
// It follows RFC 8259: strings with escapes (\uXXXX included; raw bytes >= 0x80 pass, so
// UTF-8 goes through as the model writes it), numbers (-?int frac? exp?), true / false /
// null, nesting up to kMaxDepth. Whitespace between tokens is limited to
// kMaxWhitespaceRun bytes in a row, so a model cannot fill its budget with blank lines.
//
// Thread-safety: none; a value type, cheap to copy while nesting stays shallow.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/json_lexers.h"
#include "engine/output_grammar.h"

namespace tokenmill::engine {

class JsonGrammar final : public OutputGrammar {
 public:
  static constexpr int kMaxDepth = 32;
  static constexpr int kMaxWhitespaceRun = 16;

  // True if every byte of text is allowed next (the state is not changed).
  std::unique_ptr<OutputGrammar> clone() const override { return std::make_unique<JsonGrammar>(*this); }
  bool allows(std::string_view text) const override;
  // Feeds text. REQUIRES: allows(text).
  void advance(std::string_view text) override;
  // The top-level object is closed: nothing but the end may follow.
  bool complete() const override { return mode_ == Mode::kDone; }

 private:
  enum class Mode : uint8_t {
    kValue,        // before a value (top level: before the opening brace)
    kKeyOrClose,   // after '{': a key or '}'
    kKey,          // after ',' in an object: a key
    kColon,        // after a key
    kCommaOrClose, // after a value inside an object or array
    kValueOrClose, // after '[': a value or ']'
    kString,       // inside a string (string_ says where)
    kNumber,       // inside a number (number_ says where)
    kLiteral,      // inside true / false / null
    kDone,
  };

  bool step(char c);               // false if c is not allowed (the state is then undefined)
  bool start_value(char c);        // c begins a value
  bool step_string(char c);        // step() inside a string or key
  void end_value();                // a value just ended
  void close_container();          // the innermost object or array just closed
  void begin_string(bool is_key);  // a string's opening quote was just read
  bool in_object() const { return !stack_.empty() && stack_.back() == '{'; }

  Mode mode_ = Mode::kValue;
  JsonStringLexer string_;
  JsonNumberLexer number_;
  bool string_is_key_ = false;
  uint8_t whitespace_run_ = 0;
  const char* literal_ = "";    // kLiteral: the rest of the word
  std::string stack_;           // '{' or '[' per open container
};

}  // namespace tokenmill::engine
