// The JSON Schema keywords the grammar enforces, one class at a time, each against an
// oracle: numeric bounds against exact arithmetic over every short number text,
// patterns against std::regex (ECMAScript) over random strings, formats against
// hand-picked valid and invalid values; and strict / unenforced keywords.
#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>

#include "engine/grammar_matcher.h"
#include "engine/json_schema.h"

namespace tokenmill::engine {
namespace {

using json = nlohmann::ordered_json;

std::shared_ptr<const JsonSchema> compile_ok(const std::string& schema, JsonSchema::Options options = {}) {
  auto compiled = JsonSchema::compile(json::parse(schema), options);
  EXPECT_TRUE(compiled.ok()) << schema << ": " << compiled.status().to_string();
  return compiled.ok() ? *compiled : nullptr;
}

// The whole text is accepted and may end there.
bool accepts(const std::shared_ptr<const JsonSchema>& schema, const std::string& text) {
  JsonSchemaGrammar g(schema);
  for (char c : text) {
    if (!g.allows(std::string(1, c))) return false;
    g.advance(std::string(1, c));
  }
  return g.accepts_end();
}

// Every number text with up to two integer and two fraction digits, signed or not.
std::vector<std::string> short_numbers(bool with_fractions) {
  std::vector<std::string> out;
  for (const char* sign : {"", "-"}) {
    for (int i = 0; i < 100; ++i) {
      const std::string whole = std::string(sign) + std::to_string(i);
      out.push_back(whole);
      if (!with_fractions) continue;
      for (int f = 0; f < 10; ++f) out.push_back(whole + "." + std::to_string(f));
      for (int f = 0; f < 100; ++f) out.push_back(whole + "." + (f < 10 ? "0" : "") + std::to_string(f));
    }
  }
  out.push_back("007");
  out.push_back("1.");
  out.push_back("-");
  return out;
}

// The value of a canonical short number in hundredths, or nullopt (leading zeros,
// "-0", no digit after the point).
std::optional<int64_t> hundredths(const std::string& text) {
  static const std::regex canonical("-?(0|[1-9][0-9]*)(\\.[0-9]+)?");
  if (!std::regex_match(text, canonical)) return std::nullopt;
  const bool negative = text[0] == '-';
  const size_t point = text.find('.');
  const std::string whole = text.substr(negative ? 1 : 0, point == std::string::npos ? std::string::npos : point - (negative ? 1 : 0));
  std::string fraction = point == std::string::npos ? "" : text.substr(point + 1);
  fraction.resize(2, '0');
  const int64_t v = std::stoll(whole) * 100 + std::stoll(fraction);
  if (negative && v == 0) return std::nullopt;
  return negative ? -v : v;
}

TEST(JsonSchemaNumbers, IntegerBoundsAreExact) {
  struct Case {
    const char* bounds;
    int64_t lo, hi;
  };
  const Case cases[] = {
      {R"("minimum": 0, "maximum": 150)", 0, 150},
      {R"("minimum": -17, "maximum": 42)", -17, 42},
      {R"("minimum": -99, "maximum": -20)", -99, -20},
      {R"("exclusiveMinimum": 0, "exclusiveMaximum": 10)", 1, 9},
      {R"("minimum": 7)", 7, INT64_MAX},
      {R"("maximum": -3)", INT64_MIN, -3},
      {R"("exclusiveMinimum": -1.5, "maximum": 12.7)", -1, 12},
      {R"("minimum": 5, "exclusiveMinimum": 5)", 6, INT64_MAX},
      {R"("minimum": 9, "maximum": 9)", 9, 9},
  };
  for (const Case& c : cases) {
    const auto schema = compile_ok(std::string(R"({"type": "integer", )") + c.bounds + "}");
    ASSERT_NE(schema, nullptr);
    for (const std::string& text : short_numbers(/*with_fractions=*/false)) {
      const auto v = hundredths(text);
      const bool expected = v && *v / 100 >= c.lo && *v / 100 <= c.hi;
      EXPECT_EQ(accepts(schema, text), expected) << c.bounds << ": " << text;
    }
    EXPECT_FALSE(accepts(schema, "1.0")) << c.bounds;
  }
  // Past two digits: unbounded sides go on, bounded ones stop at the bound's length.
  const auto at_least = compile_ok(R"({"type": "integer", "minimum": 120})");
  EXPECT_TRUE(accepts(at_least, "120"));
  EXPECT_TRUE(accepts(at_least, "98765432101"));
  EXPECT_FALSE(accepts(at_least, "119"));
  const auto age = compile_ok(R"({"type": "integer", "minimum": 0, "maximum": 150})");
  EXPECT_TRUE(accepts(age, "150"));
  EXPECT_FALSE(accepts(age, "151"));
  EXPECT_FALSE(accepts(age, "1500"));
}

TEST(JsonSchemaNumbers, NumberBoundsAreExactOnTheValue) {
  struct Case {
    const char* bounds;
    int64_t lo, hi;  // hundredths
    bool lo_strict, hi_strict;
  };
  const Case cases[] = {
      {R"("minimum": 0, "maximum": 1.5)", 0, 150, false, false},
      {R"("exclusiveMinimum": 0, "maximum": 1.5)", 0, 150, true, false},
      {R"("exclusiveMinimum": 0.25, "exclusiveMaximum": 0.75)", 25, 75, true, true},
      {R"("minimum": -2.5, "maximum": -0.05)", -250, -5, false, false},
      {R"("minimum": -12.34, "exclusiveMaximum": 3)", -1234, 300, false, true},
      {R"("exclusiveMinimum": -1, "exclusiveMaximum": 0)", -100, 0, true, true},
      {R"("minimum": 0.5)", 50, INT64_MAX, false, false},
      {R"("exclusiveMaximum": -0.1)", INT64_MIN, -10, false, true},
      {R"("minimum": 3.14, "maximum": 3.14)", 314, 314, false, false},
  };
  for (const Case& c : cases) {
    const auto schema = compile_ok(std::string(R"({"type": "number", )") + c.bounds + "}");
    ASSERT_NE(schema, nullptr);
    int n_accepted = 0;
    for (const std::string& text : short_numbers(/*with_fractions=*/true)) {
      const auto v = hundredths(text);
      const bool expected = v && (c.lo_strict ? *v > c.lo : *v >= c.lo) && (c.hi_strict ? *v < c.hi : *v <= c.hi);
      const bool got = accepts(schema, text);
      n_accepted += got;
      EXPECT_EQ(got, expected) << c.bounds << ": " << text;
    }
    EXPECT_GT(n_accepted, 0) << c.bounds;
  }
  const auto tiny = compile_ok(R"({"type": "number", "exclusiveMinimum": 0, "maximum": 1})");
  EXPECT_TRUE(accepts(tiny, "0.000001"));
  EXPECT_FALSE(accepts(tiny, "0.000"));
  EXPECT_FALSE(accepts(tiny, "1.0001"));
  EXPECT_TRUE(accepts(tiny, "1.000"));
  EXPECT_FALSE(JsonSchema::compile(json::parse(R"({"type": "number", "exclusiveMinimum": 1, "maximum": 1})")).ok());
}

TEST(JsonSchemaNumbers, TopLevelScalarsMayEndWhereTheyCouldGoOn) {
  const auto schema = compile_ok(R"({"type": "integer", "minimum": 0, "maximum": 150})");
  JsonSchemaGrammar g(schema);
  g.advance("15");
  EXPECT_TRUE(g.accepts_end());
  EXPECT_FALSE(g.complete());  // "150" is still possible
  g.advance("0");
  EXPECT_TRUE(g.complete());
  const auto word = compile_ok(R"({"enum": ["red", "green"]})");
  JsonSchemaGrammar w(word);
  w.advance("\"red\"");
  EXPECT_TRUE(w.complete());
  EXPECT_TRUE(accepts(compile_ok(R"({"const": {"a": [1, null]}})"), R"({"a":[1,null]})"));
  EXPECT_TRUE(accepts(compile_ok(R"({"type": "string"})"), R"("hi")"));
  // A literal longer than 65,535 bytes: positions in a rule are not 16-bit.
  const std::string long_text(70000, 'x');
  EXPECT_TRUE(accepts(compile_ok(json{{"const", long_text}}.dump()), json(long_text).dump()));
}

// Random strings over an alphabet that the patterns use, JSON-encoded.
std::string json_encoded(const std::string& s) { return json(s).dump(); }

TEST(JsonSchemaPatterns, AgreeWithEcmaScriptRegexOnRandomStrings) {
  const char* patterns[] = {
      "^[0-9]{5}$", "^[A-Z]{2}-\\d{4}$", "^(ab|cd)+x?$", "^a.c$", "b", "^[^a-c]*$", "^(?:[a-c]{1,3}|z)$",
      "^\\w+@\\w+\\.(com|org)$", "x|^y", "^[\\d\\s]{2,}$", "^(?<tag>[a-b]+)-\\1?$" /* refused below */,
      "^\\$\\d+(\\.\\d{2})?$", "^[\\-+]?\\d*$", "^\"q\\\\$",
  };
  const std::string alphabet = "abcdxyzAZ019-@.$+ \"\\";
  std::mt19937 rng(5);
  for (const char* pattern : patterns) {
    auto compiled = JsonSchema::compile(json{{"type", "string"}, {"pattern", pattern}});
    if (std::string(pattern).find("\\1") != std::string::npos) {
      ASSERT_FALSE(compiled.ok());
      EXPECT_NE(compiled.status().message().find("back-reference"), std::string::npos);
      continue;
    }
    ASSERT_TRUE(compiled.ok()) << pattern << ": " << compiled.status().to_string();
    const std::regex re(pattern, std::regex::ECMAScript);
    int n_matching = 0;
    // Strings that match some of the patterns, then random ones.
    std::vector<std::string> samples = {"abc", "a c", "ab@cd.com", "x@y.org", "\"q\\", "12345", "AB-1234", "ababx",
                                        "$12.50", "-12", "b", "1 2", "xyz", "ddd"};
    for (const std::string& s : samples) {
      const bool expected = std::regex_search(s, re);
      n_matching += expected;
      EXPECT_EQ(accepts(*compiled, json_encoded(s)), expected) << pattern << " on " << json_encoded(s);
    }
    for (int i = 0; i < 3000; ++i) {
      std::string s;
      const int n = std::uniform_int_distribution<int>(0, 8)(rng);
      for (int k = 0; k < n; ++k) s.push_back(alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)]);
      if (i % 3 == 0) {  // strings built to match more often: digits, letters, the pattern's own literals
        s = std::to_string(std::uniform_int_distribution<int>(0, 99999)(rng));
        if (i % 2) s = "AB-" + s.substr(0, 4);
      }
      const bool expected = std::regex_search(s, re);
      n_matching += expected;
      EXPECT_EQ(accepts(*compiled, json_encoded(s)), expected) << pattern << " on " << json_encoded(s);
    }
    EXPECT_GT(n_matching, 0) << pattern;
  }
}

TEST(JsonSchemaPatterns, LengthsHoldTogetherWithPatterns) {
  const auto schema = compile_ok(R"({"type": "string", "pattern": "^[a-z]+$", "minLength": 3, "maxLength": 5})");
  EXPECT_FALSE(accepts(schema, R"("ab")"));
  EXPECT_TRUE(accepts(schema, R"("abc")"));
  EXPECT_TRUE(accepts(schema, R"("abcde")"));
  EXPECT_FALSE(accepts(schema, R"("abcdef")"));
  EXPECT_FALSE(accepts(schema, R"("ab1")"));
  for (const char* refused : {"(?<=a)b", "a\\bc", "\\p{L}", "a(^b)", "(a*)*", "[z-a]", "(ab", "a{3,2}"}) {
    auto compiled = JsonSchema::compile(json{{"type", "string"}, {"pattern", refused}});
    EXPECT_FALSE(compiled.ok()) << refused;
  }
}

TEST(JsonSchemaFormats, ValidValuesOnly) {
  struct Case {
    const char* format;
    std::vector<const char*> valid, invalid;
  };
  const Case cases[] = {
      {"date", {"2024-02-29", "2023-12-31", "0001-01-01", "2000-02-29"}, {"2023-02-29", "1900-02-29", "2023-04-31", "2023-13-01", "0000-01-01", "2023-1-01"}},
      {"time", {"23:59:59Z", "00:00:00.123+05:30"}, {"24:00:00Z", "12:00:00", "12:60:00Z"}},
      {"date-time", {"2024-06-01T12:30:00Z", "1999-12-31T23:59:59.5-08:00"}, {"2024-06-01 12:30:00Z", "2024-06-01T12:30Z"}},
      {"duration", {"P1D", "PT5M", "P1Y2M3DT4H5M6S", "P3W"}, {"P", "PT", "1D", "P1H"}},
      {"uuid", {"123e4567-e89b-12d3-a456-426614174000"}, {"123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400g"}},
      {"email", {"ada@example.com", "a.b+c@mail.example.org"}, {"ada", "@example.com", "ada@example"}},
      {"ipv4", {"192.168.0.1", "255.255.255.255", "0.0.0.0"}, {"256.1.1.1", "01.2.3.4", "1.2.3"}},
      {"ipv6", {"2001:db8:0:0:0:0:0:1", "::1", "fe80::", "2001:db8::ff00:42"}, {"2001:db8", ":::", "1:2:3:4:5:6:7:8:9"}},
      {"hostname", {"example.com", "a-b.example.org"}, {"-a.com", "example", "a..com"}},
      {"uri", {"https://example.com/a/b?x=1", "ftp://files.example.org"}, {"example.com", "https://"}},
  };
  for (const Case& c : cases) {
    const auto schema = compile_ok(json{{"type", "string"}, {"format", c.format}}.dump());
    ASSERT_NE(schema, nullptr);
    for (const char* v : c.valid) EXPECT_TRUE(accepts(schema, json_encoded(v))) << c.format << ": " << v;
    for (const char* v : c.invalid) EXPECT_FALSE(accepts(schema, json_encoded(v))) << c.format << ": " << v;
  }
}

TEST(JsonSchemaObjects, OptionalPropertiesInOrderAndOthersBySchema) {
  const auto schema = compile_ok(R"({"type": "object",
      "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
      "required": ["b"], "additionalProperties": {"type": "integer"}})");
  EXPECT_TRUE(accepts(schema, R"({"b":"x"})"));
  EXPECT_TRUE(accepts(schema, R"({"a":1,"b":"x","c":true})"));
  EXPECT_TRUE(accepts(schema, R"({"b":"x", "extra": 5, "more": -2})"));
  EXPECT_FALSE(accepts(schema, R"({"a":1})"));              // b is required
  EXPECT_FALSE(accepts(schema, R"({"b":"x","extra":"no"})"));  // other keys hold integers
  EXPECT_FALSE(accepts(schema, R"({"b":"x","a":1})"));      // a named key is never written as another
  EXPECT_TRUE(accepts(schema, R"({"b":"x","ab":1})"));
  const auto counted = compile_ok(R"({"type": "object", "additionalProperties": {"type": "integer"},
      "minProperties": 2, "maxProperties": 3})");
  EXPECT_FALSE(accepts(counted, R"({"k":1})"));
  EXPECT_TRUE(accepts(counted, R"({"k":1,"j":2})"));
  EXPECT_TRUE(accepts(counted, R"({"k":1,"j":2,"i":3})"));
  EXPECT_FALSE(accepts(counted, R"({"k":1,"j":2,"i":3,"h":4})"));
  const auto patterned = compile_ok(R"({"type": "object", "patternProperties": {"^x-[a-z]+$": {"type": "string"}},
      "additionalProperties": false})");
  EXPECT_TRUE(accepts(patterned, R"({"x-id":"7"})"));
  EXPECT_FALSE(accepts(patterned, R"({"id":"7"})"));
  const auto names = compile_ok(R"({"type": "object", "propertyNames": {"pattern": "^[A-Z]{3}$"},
      "additionalProperties": {"type": "number"}})");
  EXPECT_TRUE(accepts(names, R"({"USD": 1.5, "EUR": 2})"));
  EXPECT_FALSE(accepts(names, R"({"usd": 1.5})"));
  const auto dependent = compile_ok(R"({"type": "object", "properties": {"card": {"type": "string"},
      "billing": {"type": "string"}}, "dependentRequired": {"card": ["billing"]}})");
  EXPECT_TRUE(accepts(dependent, R"({"billing":"x"})"));
  EXPECT_TRUE(accepts(dependent, R"({"card":"1","billing":"x"})"));
  EXPECT_FALSE(accepts(dependent, R"({"card":"1"})"));
}

TEST(JsonSchemaArrays, PrefixItemsContainsAndCounts) {
  const auto tuple = compile_ok(R"({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
      "items": false, "minItems": 2})");
  EXPECT_TRUE(accepts(tuple, R"([1,"a"])"));
  EXPECT_FALSE(accepts(tuple, R"([1])"));
  EXPECT_FALSE(accepts(tuple, R"([1,"a",2])"));
  EXPECT_FALSE(accepts(tuple, R"(["a",1])"));
  const auto open = compile_ok(R"({"type": "array", "prefixItems": [{"const": "head"}], "items": {"type": "integer"},
      "maxItems": 3})");
  EXPECT_TRUE(accepts(open, R"([])"));
  EXPECT_TRUE(accepts(open, R"(["head",1,2])"));
  EXPECT_FALSE(accepts(open, R"(["head",1,2,3])"));
  const auto containing = compile_ok(R"({"type": "array", "items": {"type": "integer"},
      "contains": {"minimum": 10}, "minContains": 2})");
  EXPECT_FALSE(accepts(containing, R"([1,12])"));
  EXPECT_TRUE(accepts(containing, R"([1,12,30])"));
}

TEST(JsonSchemaComposition, AllOfNotRecursionAndTypeLists) {
  const auto merged = compile_ok(R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
      {"properties": {"a": {"minimum": 3}, "b": {"type": "string"}}}]})");
  EXPECT_TRUE(accepts(merged, R"({"a":3,"b":"x"})"));
  EXPECT_FALSE(accepts(merged, R"({"a":2})"));
  EXPECT_FALSE(accepts(merged, R"({"b":"x"})"));
  const auto not_enum = compile_ok(R"({"type": "string", "not": {"enum": ["admin", "root"]}})");
  EXPECT_FALSE(accepts(not_enum, R"("admin")"));
  EXPECT_TRUE(accepts(not_enum, R"("admins")"));
  EXPECT_TRUE(accepts(not_enum, R"("adm")"));
  EXPECT_TRUE(accepts(not_enum, R"("")"));
  const auto tree = compile_ok(R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
      "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"], "additionalProperties": false}},
      "$ref": "#/$defs/node"})");
  EXPECT_TRUE(accepts(tree, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4,"kids":[]}]}]})"));
  EXPECT_FALSE(accepts(tree, R"({"v":1,"kids":[{"w":2}]})"));
  const auto json_itself = compile_ok(R"({"$defs": {"j": {"anyOf": [{"type": ["string", "number", "boolean", "null"]},
      {"type": "array", "items": {"$ref": "#/$defs/j"}}, {"type": "object", "additionalProperties": {"$ref": "#/$defs/j"}}]}},
      "$ref": "#/$defs/j"})");
  EXPECT_TRUE(accepts(json_itself, R"({"a":[1,{"b":null}],"c":"d"})"));
  EXPECT_TRUE(accepts(json_itself, R"([[[true]]])"));
  const auto optional = compile_ok(R"({"type": ["string", "null"], "maxLength": 2})");
  EXPECT_TRUE(accepts(optional, "null"));
  EXPECT_TRUE(accepts(optional, R"("ab")"));
  EXPECT_FALSE(accepts(optional, R"("abc")"));
}

TEST(JsonSchemaStrictness, UnenforceableKeywordsAreRefusedWhenStrictAndListedOtherwise) {
  const std::string schema = R"({"type": "object", "properties": {
      "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
      "step": {"type": "number", "multipleOf": 0.5}}})";
  auto strict = JsonSchema::compile(json::parse(schema), {.strict = true});
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find("'uniqueItems' at $.properties.tags"), std::string::npos)
      << strict.status().message();
  auto lenient = JsonSchema::compile(json::parse(schema));
  ASSERT_TRUE(lenient.ok());
  ASSERT_EQ((*lenient)->unenforced().size(), 2u);
  EXPECT_EQ((*lenient)->unenforced()[0].keyword, "uniqueItems");
  EXPECT_EQ((*lenient)->unenforced()[1].path, "$.properties.step");
  EXPECT_TRUE(accepts(*lenient, R"({"tags":["a"],"step":1.5})"));
  auto object_only = JsonSchema::compile(json::parse(R"({"type": "string"})"), {.object_only = true});
  EXPECT_FALSE(object_only.ok());
}

TEST(JsonSchemaCache, TheSameSchemaAndOptionsCompileOnce) {
  const json schema = json::parse(R"({"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}}})");
  auto first = JsonSchema::compile(schema);
  auto again = JsonSchema::compile(json::parse(schema.dump()));
  auto strict = JsonSchema::compile(schema, {.strict = true});
  ASSERT_TRUE(first.ok() && again.ok() && strict.ok());
  EXPECT_EQ(first->get(), again->get());
  EXPECT_NE(first->get(), strict->get());
}

}  // namespace
}  // namespace tokenmill::engine
