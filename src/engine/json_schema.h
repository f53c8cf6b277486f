// Structured outputs: a JSON schema compiled into a byte-level grammar, so that every
// choice is a JSON text that validates against it (OpenAI's response_format
// {"type": "json_schema"}, Ollama's format given as a schema).
//
// The schema subset (anything else is refused by compile(), naming the keyword):
//   type: "object" | "array" | "string" | "number" | "integer" | "boolean" | "null"
//   object: properties (every one is written, in the order given - valid whatever
//           `required` says), required, additionalProperties (only false or absent:
//           no other keys are ever written)
//   array:  items, minItems, maxItems
//   string: minLength, maxLength (in characters; an escape counts as one)
//   enum, const: the value is one of these JSON values (written compactly)
//   anyOf, oneOf, a list of types: alternatives whose values start with different
//           characters (a type or null - Pydantic's Optional -, a string or a number, ...)
//   $ref to "#/$defs/NAME" or "#/definitions/NAME" (not recursive), with $defs /
//           definitions at the top level
//   title, description, default, examples, $schema, $id, $comment, strict: ignored
// The top level is an object or an array (after $ref). Whitespace between tokens is allowed in runs of
// at most JsonGrammar::kMaxWhitespaceRun bytes; nesting at most kMaxDepth.
//
// Thread-safety: a JsonSchema is immutable and shared; a JsonSchemaGrammar is a value.
#pragma once

#include <bitset>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "engine/json_lexers.h"
#include "engine/output_grammar.h"

namespace tokenmill::engine {

class JsonSchema {
 public:
  static constexpr int kMaxDepth = 32;
  static constexpr int32_t kMaxNodes = 4096;
  // enum / const values over the whole schema: every byte the model writes is checked
  // against the candidates, so their number bounds the cost of each token.
  static constexpr int32_t kMaxLiterals = 1024;
  static constexpr int64_t kMaxLiteralBytes = 65536;

  // Compiles a parsed schema. The error says which keyword at which path is not supported.
  static Result<std::shared_ptr<const JsonSchema>> compile(const nlohmann::ordered_json& schema);

  enum class Kind : uint8_t { kObject, kArray, kString, kNumber, kInteger, kLiterals, kAnyOf };
  struct Node {
    Kind kind = Kind::kString;
    std::vector<std::pair<std::string, int32_t>> properties;  // kObject: "key" as JSON text, node
    int32_t items = -1;                                       // kArray: the items' node
    int32_t min_items = 0, max_items = INT32_MAX;             // kArray
    int32_t min_length = 0, max_length = INT32_MAX;           // kString: characters (an escape is one)
    std::vector<std::string> literals;  // kLiterals: the allowed values as compact JSON texts
    // kAnyOf: each alternative with the bytes its values can start with (disjoint sets).
    std::vector<std::pair<std::bitset<256>, int32_t>> alternatives;
  };
  const Node& node(int32_t i) const { return nodes_[static_cast<size_t>(i)]; }
  int32_t root() const { return root_; }

 private:
  std::vector<Node> nodes_;
  int32_t root_ = 0;
  friend class SchemaCompiler;
};

class JsonSchemaGrammar final : public OutputGrammar {
 public:
  explicit JsonSchemaGrammar(std::shared_ptr<const JsonSchema> schema);

  bool allows(std::string_view text) const override;
  void advance(std::string_view text) override;
  bool complete() const override { return done_; }

 private:
  // One open value: its node and where in it the text is.
  struct Frame {
    explicit Frame(int32_t n) : node(n) {}
    int32_t node = 0;
    uint8_t phase = 0;    // per kind; 0: before the value's first byte
    int32_t index = 0;    // object: the property being written; array: items written
    std::string matched;  // a key or literal being matched; a number's bytes
  };
  bool step(char c);
  // step() for the top frame f, of node n, by its kind.
  bool step_object(Frame& f, const JsonSchema::Node& n, char c);
  bool step_array(Frame& f, const JsonSchema::Node& n, char c);
  // Opens a value of `node` inside the top frame, whose references it invalidates.
  bool push_child(int32_t node, char c);
  bool start(Frame& frame, char c);  // c is the value's first byte
  void end_value();                  // the top frame's value is complete: pop it
  bool between_tokens() const;

  std::shared_ptr<const JsonSchema> schema_;
  std::vector<Frame> stack_;
  JsonStringLexer string_;  // the string being written (only the top frame's value is a scalar)
  JsonNumberLexer number_;  // the number being written
  uint8_t whitespace_run_ = 0;
  bool done_ = false;
};

}  // namespace tokenmill::engine
