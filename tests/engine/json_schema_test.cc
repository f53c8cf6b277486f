// JsonSchema / JsonSchemaGrammar: compile() refuses what it cannot enforce, naming the
// keyword and where; the grammar accepts texts that validate, byte by byte, completes
// when the top-level value closes, and refuses a text at its first byte that breaks the
// schema. (json_schema_keywords_test.cc has the keywords one class at a time.)
#include "engine/json_schema.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

namespace tokenmill::engine {
namespace {

using json = nlohmann::ordered_json;

std::shared_ptr<const JsonSchema> compile_ok(const json& schema) {
  auto compiled = JsonSchema::compile(schema);
  EXPECT_TRUE(compiled.ok()) << compiled.status().to_string();
  return compiled.ok() ? *compiled : nullptr;
}

// Bytes of text accepted one at a time.
size_t accepted_prefix(const std::string& text, JsonSchemaGrammar& g) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (!g.allows(text.substr(i, 1))) return i;
    g.advance(text.substr(i, 1));
  }
  return text.size();
}

const json kPerson = json::parse(R"({
  "type": "object",
  "title": "a person",
  "properties": {
    "name": {"type": "string", "description": "full name"},
    "age": {"type": "integer"},
    "height": {"type": "number"},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    "role": {"enum": ["admin", "user", 7, null]},
    "active": {"type": "boolean"},
    "address": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                "additionalProperties": false}
  },
  "required": ["name", "age"]
})");

TEST(JsonSchemaGrammar, AcceptsValidTextsAndCompletesAtTheEnd) {
  const auto schema = compile_ok(kPerson);
  ASSERT_NE(schema, nullptr);
  const char* valid[] = {
      R"({"name":"Ada","age":36,"height":1.7e0,"tags":[],"role":"admin","active":true,"address":{"city":"Paris"}})",
      "{ \"name\" : \"A \\\"q\\\" \xc3\xa9\", \"age\": -7, \"height\": -12.5, \"tags\": [\"x\", \"y\", \"z\"],\n"
      "  \"role\": 7, \"active\": false, \"address\": {\"city\": \"\"} }",
      R"({"name":"","age":12345,"height":3,"tags":["a"],"role":null,"active":true,"address":{"city":"x"}})",
  };
  for (const char* text : valid) {
    JsonSchemaGrammar g(schema);
    const std::string s(text);
    EXPECT_EQ(accepted_prefix(s, g), s.size()) << s;
    EXPECT_TRUE(g.complete()) << s;
    EXPECT_FALSE(g.allows(" ")) << "nothing may follow: " << s;
    // Every valid text parses and has its properties in the schema's order.
    const json parsed = json::parse(s);
    EXPECT_EQ(parsed.size(), 7u);
    EXPECT_EQ(parsed.begin().key(), "name");  // in the order of the schema
  }
}

TEST(JsonSchemaGrammar, RefusesTheFirstByteThatBreaksTheSchema) {
  const auto schema = compile_ok(kPerson);
  ASSERT_NE(schema, nullptr);
  struct Case {
    const char* text;
    size_t accepted;
  };
  const Case cases[] = {
      {R"({"age":1})", 2},                   // properties in the order given: "name" first
      {R"({"name":1})", 8},                  // name is a string
      {R"({"name":"a","age":1.5})", 19},     // age is an integer
      {R"({"name":"a","age":01})", 19},      // no leading zeros
      {R"({"name":"a","age":1,"role":7,"height":1})", 30},  // properties in the schema's order
      {R"({"name":"a","age":1,"height":1,"tags":["a","b","c","d"]})", 50},  // maxItems 3
      {R"({"name":"a","age":1,"height":1,"tags":[],"role":"root"})", 49},   // no enum value starts "r
      {R"({"name":"a","age":1,"height":1,"tags":[],"role":7,"active":1})", 59},
      {R"({"name":"a","age":1,"height":1,"tags":[],"role":7,"active":true,"address":{"zip":1}})", 76},
      {R"([])", 0},                          // the top level is an object
  };
  for (const Case& c : cases) {
    JsonSchemaGrammar g(schema);
    EXPECT_EQ(accepted_prefix(c.text, g), c.accepted) << c.text;
    EXPECT_FALSE(g.complete()) << c.text;
  }
}

TEST(JsonSchemaGrammar, ArraysCountTheirItems) {
  const auto schema = compile_ok(json::parse(
      R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})"));
  ASSERT_NE(schema, nullptr);
  for (const char* text : {"[1,2]", "[ 1 , 2 , 3 ]", "[-4,50,0]"}) {
    JsonSchemaGrammar g(schema);
    EXPECT_EQ(accepted_prefix(text, g), std::string(text).size()) << text;
    EXPECT_TRUE(g.complete()) << text;
  }
  JsonSchemaGrammar short_one(schema);
  EXPECT_EQ(accepted_prefix("[1]", short_one), 2u);  // minItems 2: no ']' after one
  JsonSchemaGrammar long_one(schema);
  EXPECT_EQ(accepted_prefix("[1,2,3,4]", long_one), 6u);  // maxItems 3: no fourth ','
}

TEST(JsonSchemaGrammar, LiteralsThatArePrefixesOfOthersEndAtTheNextByte) {
  const auto schema = compile_ok(json::parse(R"({"type":"object","properties":{"n":{"enum":[1,12,"a"]}}})"));
  ASSERT_NE(schema, nullptr);
  for (const char* text : {R"({"n":1})", R"({"n":12})", R"({"n": "a" })"}) {
    JsonSchemaGrammar g(schema);
    EXPECT_EQ(accepted_prefix(text, g), std::string(text).size()) << text;
    EXPECT_TRUE(g.complete()) << text;
  }
  JsonSchemaGrammar g(schema);
  EXPECT_EQ(accepted_prefix(R"({"n":13})", g), 6u);
}

TEST(JsonSchemaGrammar, WhitespaceRunsAreBounded) {
  const auto schema = compile_ok(json::parse(R"({"type":"object","properties":{}})"));
  ASSERT_NE(schema, nullptr);
  JsonSchemaGrammar g(schema);
  const std::string text = "{" + std::string(16, ' ') + " }";
  EXPECT_EQ(accepted_prefix(text, g), 17u);
  JsonSchemaGrammar empty(schema);
  EXPECT_EQ(accepted_prefix("{}", empty), 2u);
  EXPECT_TRUE(empty.complete());
}

// What Pydantic writes for a model with a nested model and an optional field: $defs,
// $ref, anyOf of a type and null, titles.
TEST(JsonSchemaGrammar, PydanticModelsWithRefsAndOptionalFields) {
  const auto schema = compile_ok(json::parse(R"({
    "$defs": {"Address": {"properties": {"city": {"title": "City", "type": "string"}},
                          "required": ["city"], "title": "Address", "type": "object"}},
    "properties": {
      "name": {"title": "Name", "type": "string"},
      "home": {"$ref": "#/$defs/Address"},
      "work": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}], "default": null},
      "score": {"type": ["number", "null"]}
    },
    "required": ["name", "home", "work", "score"], "title": "Person", "type": "object"})"));
  ASSERT_NE(schema, nullptr);
  for (const char* text : {R"({"name":"a","home":{"city":"x"},"work":null,"score":null})",
                           R"({"name":"a","home":{"city":"x"},"work":{"city":"y"},"score":-1.5})"}) {
    JsonSchemaGrammar g(schema);
    EXPECT_EQ(accepted_prefix(text, g), std::string(text).size()) << text;
    EXPECT_TRUE(g.complete()) << text;
  }
  JsonSchemaGrammar g(schema);
  EXPECT_EQ(accepted_prefix(R"({"name":"a","home":{"city":"x"},"work":"y")", g), 39u);  // neither an Address nor null
}

// Checks a parsed value against the test schemas' subset (types, properties in order,
// item counts, enums, anyOf by trying each alternative).
bool validates(const json& value, const json& schema, const json& root) {
  if (schema.contains("$ref")) {
    const std::string ref = schema["$ref"];
    return validates(value, root["$defs"][ref.substr(ref.rfind('/') + 1)], root);
  }
  if (schema.contains("enum")) {
    for (const auto& v : schema["enum"]) {
      if (v == value) return true;
    }
    return false;
  }
  if (schema.contains("anyOf")) {
    for (const auto& alternative : schema["anyOf"]) {
      if (validates(value, alternative, root)) return true;
    }
    return false;
  }
  const std::string type = schema["type"];
  if (type == "object") {
    if (!value.is_object()) return false;
    auto it = value.begin();  // the properties written, in the schema's order (the optional ones may be left out)
    for (const auto& [key, child] : schema["properties"].items()) {
      if (it == value.end() || it.key() != key) continue;
      if (!validates(it.value(), child, root)) return false;
      ++it;
    }
    return it == value.end();
  }
  if (type == "array") {
    if (!value.is_array()) return false;
    if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<size_t>()) return false;
    if (schema.contains("minItems") && value.size() < schema["minItems"].get<size_t>()) return false;
    for (const auto& item : value) {
      if (!validates(item, schema["items"], root)) return false;
    }
    return true;
  }
  if (type == "string") return value.is_string();
  if (type == "integer") {  // digits past 64 bits parse as a float
    return value.is_number_integer() ||
           (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>());
  }
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  return value.is_null();
}

// Random walks through the grammar: at every step a random byte among those it allows.
// Every walk that completes is JSON that validates; most walks complete.
TEST(JsonSchemaGrammar, RandomWalksGiveValidDocuments) {
  const json root = json::parse(R"({
    "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "integer"}}}},
    "type": "object",
    "properties": {
      "s": {"type": "string"},
      "tags": {"type": "array", "items": {"enum": ["a", "bc", 7, true]}, "minItems": 1, "maxItems": 3},
      "p": {"$ref": "#/$defs/Point"},
      "maybe": {"anyOf": [{"type": "boolean"}, {"type": "null"}, {"type": "array", "items": {"type": "integer"}}]},
      "empty": {"type": "object", "properties": {}}
    }})");
  const auto schema = compile_ok(root);
  ASSERT_NE(schema, nullptr);
  // Every byte the schema's keys and literals need, the JSON punctuation, escapes and
  // whitespace, and a few that never fit.
  const std::string alphabet = "{}[]\":,-+.eE0123456789 \n\tabcdefghijklmnopqrstuvwxyz\\/#";
  std::mt19937 rng(17);
  int n_complete = 0;
  for (int walk = 0; walk < 300; ++walk) {
    JsonSchemaGrammar g(schema);
    std::string text;
    while (!g.complete() && text.size() < 400) {
      std::string allowed;
      for (char c : alphabet) {
        if (g.allows(std::string(1, c))) allowed.push_back(c);
      }
      ASSERT_FALSE(allowed.empty()) << "stuck after: " << json(text).dump();
      const char c = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
      g.advance(std::string(1, c));
      text.push_back(c);
    }
    if (!g.complete()) continue;
    ++n_complete;
    json parsed;
    try {
      parsed = json::parse(text);
    } catch (const json::out_of_range&) {
      continue;  // valid JSON with a number beyond double's range (say 1e512): nlohmann refuses it
    } catch (const json::exception& e) {
      FAIL() << e.what() << ": " << json(text).dump();
    }
    EXPECT_TRUE(validates(parsed, root, root)) << json(text).dump();
  }
  std::printf("random walks: %d of 300 completed, all valid\n", n_complete);
  EXPECT_GE(n_complete, 100);
}

TEST(JsonSchemaGrammar, StringLengthsCountCharacters) {
  auto schema = compile_ok(json::parse(R"({"type": "object", "properties": {
      "code": {"type": "string", "minLength": 2, "maxLength": 3}}})"));
  auto accepts = [&](const std::string& text) {
    JsonSchemaGrammar g(schema);
    return accepted_prefix(text, g) == text.size() && g.complete();
  };
  EXPECT_TRUE(accepts(R"({"code": "ab"})"));
  EXPECT_TRUE(accepts(R"({"code": "abc"})"));
  EXPECT_TRUE(accepts(R"({"code": "\n\t\""})"));  // escapes count one each
  EXPECT_TRUE(accepts("{\"code\": \"\xc3\xa9\xc3\xa9\xc3\xa9\"}"));  // so do multi-byte characters
  EXPECT_TRUE(accepts(R"({"code": "a\n"})"));
  EXPECT_FALSE(accepts(R"({"code": "a"})"));
  EXPECT_FALSE(accepts(R"({"code": "abcd"})"));
  JsonSchemaGrammar g(schema);
  const std::string long_one = R"({"code": "abcd"})";
  EXPECT_EQ(accepted_prefix(long_one, g), long_one.rfind('d'));  // refused at the fourth character
  EXPECT_FALSE(JsonSchema::compile(json::parse(
      R"({"type": "object", "properties": {"a": {"type": "string", "minLength": 4, "maxLength": 3}}})")).ok());
}

TEST(JsonSchema, RefusesMalformedSchemasNamingTheProblem) {
  struct Case {
    const char* schema;
    const char* message_part;
  };
  const Case cases[] = {
      {R"({"type":"object","properties":{"a":{"$ref":"#/$defs/Missing"}}})", "names nothing in the schema"},
      {R"({"type":"object","properties":{"a":{"$ref":"http://example.com/s.json"}}})", "not a reference into this schema"},
      {R"({"type":"array","items":{"type":"integer"},"minItems":3,"maxItems":2})", "'minItems' exceeds 'maxItems'"},
      {R"({"type":"thing"})", "unknown type 'thing'"},
      {R"({"type":5})", "'type' at $ must be a type name"},
      {R"(false)", "is false: no value is valid"},
      {R"([1])", "must be an object or a boolean"},
      {R"({"allOf":[{"type":"string"},{"type":"integer"}]})", "'allOf' parts at $ and $.allOf[1] conflict: 'type'"},
      {R"({"type":"string","pattern":"^(a)\\1$"})", "back-reference"},
      {R"({"type":"string","pattern":"(?=a)b"})", "look-ahead"},
      {R"({"type":"integer","minimum":5,"maximum":3})", "no number is between the bounds 5 and 3"},
      {R"({"type":"object","properties":{},"required":["x"],"additionalProperties":false})", "which additionalProperties forbids"},
      {R"({"type":"array","uniqueItems":true,"strict":true})", nullptr},  // not strict by this keyword: allowed
  };
  for (const Case& c : cases) {
    auto compiled = JsonSchema::compile(json::parse(c.schema));
    if (c.message_part == nullptr) {
      EXPECT_TRUE(compiled.ok()) << c.schema;
      continue;
    }
    ASSERT_FALSE(compiled.ok()) << c.schema;
    EXPECT_NE(compiled.status().message().find(c.message_part), std::string::npos)
        << c.schema << " -> " << compiled.status().message();
  }
  json many = {{"type", "object"}, {"properties", {{"a", {{"enum", json::array()}}}}}};
  for (int i = 0; i <= JsonSchema::kMaxLiterals; ++i) many["properties"]["a"]["enum"].push_back(i);
  auto too_many = JsonSchema::compile(many);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("exceed 4096 values"), std::string::npos);
  json deep = {{"type", "string"}};
  for (int i = 0; i < 70; ++i) deep = {{"type", "array"}, {"items", deep}};
  auto too_deep = JsonSchema::compile(deep);
  ASSERT_FALSE(too_deep.ok());
  EXPECT_NE(too_deep.status().message().find("deeper than 64"), std::string::npos);
}

}  // namespace
}  // namespace tokenmill::engine
