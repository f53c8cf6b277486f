// The JSON-schema compiler and both output grammars (JSON mode, JSON schema) against
// hostile schemas and generated text. Input: a schema (JSON), NUL, then text that is
// fed to each grammar byte by byte as long as the grammar allows it. Checked beyond
// memory safety: when a grammar says its value is complete, what it accepted parses as
// JSON (and in JSON mode is an object); the schema grammar's whole-vocabulary mask, over a
// vocabulary of every byte and pieces of the text, equals allows() piece by piece at the
// start and where the text stops.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/json_grammar.h"
#include "engine/grammar_token_masks.h"
#include "engine/json_schema.h"
#include "fuzz_input.h"

using namespace tokenmill;

namespace {

// Feeds text while the grammar allows it; returns the accepted prefix. Bytes go one at a
// time or, at some bytes, two together: allows() of a multi-byte piece, as tokens are.
std::string feed(engine::OutputGrammar& grammar, std::string_view text) {
  std::string accepted;
  size_t i = 0;
  while (i < text.size() && !grammar.complete()) {
    size_t n = (i + 1 < text.size() && (text[i] & 0x40)) ? 2 : 1;
    if (n == 2 && !grammar.allows(text.substr(i, 2))) n = 1;
    const std::string_view piece = text.substr(i, n);
    if (!grammar.allows(piece)) break;
    grammar.advance(piece);
    accepted += piece;
    i += n;
  }
  return accepted;
}

void check_complete(const engine::OutputGrammar& grammar, const std::string& accepted, bool object) {
  if (!grammar.complete()) return;
  // Raw bytes >= 0x80 pass inside strings as the model writes them (the detokenizer
  // makes the text valid UTF-8); the structure is what is checked here.
  std::string ascii = accepted;
  for (char& c : ascii) {
    if (static_cast<unsigned char>(c) >= 0x80) c = 'x';
  }
  const auto parsed = nlohmann::ordered_json::parse(ascii, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || (object && !parsed.is_object())) {
    std::fprintf(stderr, "fuzz_json_schema: a complete value does not parse: %s\n", accepted.c_str());
    std::abort();
  }
}

// Every piece's mask bit against allows().
void check_mask(engine::GrammarTokenMasks& masks, const engine::JsonSchemaGrammar& grammar,
                const engine::GrammarMatcher& matcher, const std::vector<std::string>& pieces) {
  std::vector<uint32_t> bits(engine::GrammarTokenMasks::words(static_cast<int32_t>(pieces.size())));
  masks.fill(matcher, bits);
  for (size_t id = 0; id < pieces.size(); ++id) {
    const bool in_mask = (bits[id / 32] >> (id % 32)) & 1u;
    if (in_mask != grammar.allows(pieces[id])) {
      std::fprintf(stderr, "fuzz_json_schema: the mask says %d for piece %zu, allows() the opposite\n", in_mask, id);
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::InputParts parts(data, size);
  const std::string_view schema_text = parts.next();
  const std::string_view text = parts.rest();

  engine::JsonGrammar json_mode;
  check_complete(json_mode, feed(json_mode, text), /*object=*/true);

  const auto schema = nlohmann::ordered_json::parse(schema_text, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return 0;
  auto compiled = engine::JsonSchema::compile(schema);
  if (!compiled.ok()) return 0;
  engine::JsonSchemaGrammar grammar(*compiled);
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.emplace_back(1, static_cast<char>(b));
  for (size_t i = 0; i + 1 < text.size() && pieces.size() < 320; i += 2) pieces.emplace_back(text.substr(i, 2 + i % 3));
  engine::GrammarTokenMasks masks((*compiled)->grammar(), std::make_shared<const engine::TokenTrie>(pieces));
  engine::GrammarMatcher start((*compiled)->grammar());
  check_mask(masks, grammar, start, pieces);
  const std::string accepted = feed(grammar, text);
  check_complete(grammar, accepted, /*object=*/false);
  engine::GrammarMatcher after((*compiled)->grammar());
  after.advance(accepted);
  check_mask(masks, grammar, after, pieces);
  return 0;
}
