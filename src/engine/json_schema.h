// Structured outputs: a JSON schema compiled into a byte grammar (engine/grammar.h), so
// that every choice is a JSON text that validates against it (OpenAI's response_format
// {"type": "json_schema"}, Ollama's format given as a schema, tool arguments).
//
// Enforced by the grammar (docs/serving.md has the table):
//   type (a name or a list), enum, const, anyOf, oneOf, allOf (merged), not of enum /
//   const on strings, $ref into the document (recursion included: nesting is bounded by
//   GrammarMatcher::kMaxDepth frames), boolean schemas;
//   objects: properties (in the schema's order; the optional ones may be left out),
//     required, additionalProperties / unevaluatedProperties (false, true or a schema),
//     patternProperties, propertyNames, minProperties, maxProperties, dependentRequired
//     (a dependency's names are always written);
//   arrays: items (a schema or false), prefixItems, minItems, maxItems, contains with
//     minContains;
//   strings: minLength, maxLength, pattern, format (date, time, date-time, duration,
//     uuid, email, ipv4, ipv6, hostname, uri), all of them together;
//   numbers and integers: minimum, maximum, exclusiveMinimum, exclusiveMaximum, exactly.
// Not enforceable by a grammar (uniqueItems, multipleOf, if/then/else, dependentSchemas,
// maxContains, not of other schemas, contentEncoding / contentMediaType, unknown
// formats): with strict (OpenAI's flag) compile() refuses them, naming keyword and path;
// without it they are listed in unenforced() and the rest is still enforced.
// Annotations and unknown keywords are ignored, as JSON Schema says.
// Whitespace between tokens comes in runs of at most JsonGrammar::kMaxWhitespaceRun bytes;
// strings are written with one spelling per character (engine/json_string_chars.h).
//
// Thread-safety: a JsonSchema is immutable and shared; a JsonSchemaGrammar is a value.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "engine/grammar.h"
#include "engine/grammar_matcher.h"
#include "engine/grammar_token_masks.h"
#include "engine/output_grammar.h"

namespace tokenmill::engine {

class JsonSchema {
 public:
  // Bounds on what one schema may cost: grammar elements, nesting of the schema's text
  // (through $refs too), and enum / const values over the whole schema (each is a
  // literal every byte is checked against).
  static constexpr int64_t kMaxElements = 2'000'000;
  static constexpr size_t kMaxSchemaBytes = 1 << 20;  // as compact JSON text
  static constexpr int kMaxDepth = 64;
  static constexpr int32_t kMaxLiterals = 4096;
  static constexpr int64_t kMaxLiteralBytes = 262144;

  struct Options {
    bool strict = false;     // refuse what the grammar cannot enforce
    bool object_only = false;  // the top level must be an object (tool arguments)
  };
  // A keyword the grammar does not enforce, where it is (a path like $.properties.tags).
  struct Unenforced {
    std::string keyword;
    std::string path;
  };

  // Compiles a parsed schema. The error names the keyword and its path. The last
  // kCacheEntries schemas compiled are kept, keyed by their text and options, so a
  // schema sent with every request is compiled once. Thread-safe.
  static constexpr size_t kCacheEntries = 64;
  static Result<std::shared_ptr<const JsonSchema>> compile(const nlohmann::ordered_json& schema, Options options);
  static Result<std::shared_ptr<const JsonSchema>> compile(const nlohmann::ordered_json& schema) {
    return compile(schema, Options{});
  }

  const std::shared_ptr<const Grammar>& grammar() const { return grammar_; }
  // The grammar's whole-vocabulary masks over `trie`, made on first use and kept with the
  // compiled schema (for one vocabulary at a time: another replaces them).
  std::shared_ptr<GrammarTokenMasks> token_masks(const std::shared_ptr<const TokenTrie>& trie) const;
  const std::vector<Unenforced>& unenforced() const { return unenforced_; }
  // The schema as given, for checking a finished value against what was not enforced.
  const nlohmann::ordered_json& source() const { return source_; }

 private:
  std::shared_ptr<const Grammar> grammar_;
  nlohmann::ordered_json source_;
  std::vector<Unenforced> unenforced_;
  mutable std::mutex masks_mutex_;
  mutable std::shared_ptr<GrammarTokenMasks> masks_;
  friend class SchemaCompiler;
};

class JsonSchemaGrammar final : public OutputGrammar {
 public:
  explicit JsonSchemaGrammar(std::shared_ptr<const JsonSchema> schema)
      : schema_(std::move(schema)), matcher_(schema_->grammar()) {}

  std::unique_ptr<OutputGrammar> clone() const override { return std::make_unique<JsonSchemaGrammar>(*this); }
  bool allows(std::string_view text) const override { return matcher_.allows(text); }
  void advance(std::string_view text) override { matcher_.advance(text); }
  // The value is whole and nothing may follow (an object or array has closed).
  bool complete() const override { return matcher_.complete(); }
  // The value is whole but could go on (a number at the top level): the output may end.
  bool accepts_end() const override { return matcher_.accepts_end(); }
  bool fill_token_mask(const std::shared_ptr<const TokenTrie>& trie, std::span<uint32_t> bits) const override {
    schema_->token_masks(trie)->fill(matcher_, bits);
    return true;
  }

 private:
  std::shared_ptr<const JsonSchema> schema_;
  GrammarMatcher matcher_;
};

}  // namespace tokenmill::engine
