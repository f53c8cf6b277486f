#include "dataset/json_validator.h"

#include <gtest/gtest.h>

namespace tokenmill::dataset {
namespace {

using Json = nlohmann::json;

std::string validate(const char* schema, const char* value) {
  auto v = JsonValidator::create(Json::parse(schema));
  EXPECT_TRUE(v.ok()) << v.status().message();
  return v->validate(Json::parse(value));
}

TEST(JsonValidator, TypesIncludingIntegralFloats) {
  EXPECT_EQ(validate(R"({"type": "integer"})", "3"), "");
  EXPECT_EQ(validate(R"({"type": "integer"})", "3.0"), "");
  EXPECT_NE(validate(R"({"type": "integer"})", "3.5"), "");
  EXPECT_EQ(validate(R"({"type": ["string", "null"]})", "null"), "");
  EXPECT_NE(validate(R"({"type": "string"})", "1"), "");
}

TEST(JsonValidator, ObjectsNameWhatIsWrongAndWhere) {
  const char* schema = R"({"type": "object", "required": ["name"], "additionalProperties": false,
                            "properties": {"name": {"type": "string", "minLength": 2},
                                           "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2}}})";
  EXPECT_EQ(validate(schema, R"({"name": "Al", "tags": ["a"]})"), "");
  EXPECT_NE(validate(schema, R"({"tags": []})").find("missing \"name\""), std::string::npos);
  EXPECT_NE(validate(schema, R"({"name": "A"})").find("$.name"), std::string::npos);
  EXPECT_NE(validate(schema, R"({"name": "Al", "tags": ["c"]})").find("$.tags[0]"), std::string::npos);
  EXPECT_NE(validate(schema, R"({"name": "Al", "tags": ["a", "b", "a"]})"), "");
  EXPECT_NE(validate(schema, R"({"name": "Al", "x": 1})").find("unexpected property \"x\""), std::string::npos);
}

TEST(JsonValidator, NumbersStringsAndCombinators) {
  EXPECT_NE(validate(R"({"minimum": 1, "exclusiveMaximum": 5})", "5"), "");
  EXPECT_EQ(validate(R"({"minimum": 1, "exclusiveMaximum": 5})", "4.5"), "");
  EXPECT_EQ(validate(R"({"multipleOf": 0.5})", "2.5"), "");
  EXPECT_NE(validate(R"({"multipleOf": 0.5})", "2.3"), "");
  EXPECT_EQ(validate(R"({"pattern": "^[a-z]+$"})", R"("abc")"), "");
  EXPECT_NE(validate(R"({"pattern": "^[a-z]+$"})", R"("ab1")"), "");
  EXPECT_EQ(validate(R"({"anyOf": [{"type": "string"}, {"type": "integer"}]})", "1"), "");
  EXPECT_NE(validate(R"({"oneOf": [{"type": "number"}, {"type": "integer"}]})", "1"), "");  // both match
  EXPECT_NE(validate(R"({"not": {"type": "null"}})", "null"), "");
}

TEST(JsonValidator, RefsAndTheirCycles) {
  const char* schema = R"({"$defs": {"item": {"type": "object", "properties": {"next": {"$ref": "#/$defs/item"}}}},
                            "$ref": "#/$defs/item"})";
  EXPECT_EQ(validate(schema, R"({"next": {"next": {}}})"), "");
  EXPECT_NE(validate(schema, R"({"next": 3})"), "");
  EXPECT_NE(validate(R"({"$ref": "#/nowhere"})", "1").find("cannot resolve"), std::string::npos);
  EXPECT_NE(validate(R"({"$defs": {"x": {"$ref": "#/$defs/x"}}, "$ref": "#/$defs/x"})", "1"), "");
}

TEST(JsonValidator, BadSchemasAreRefused) {
  EXPECT_FALSE(JsonValidator::create(Json::parse("3")).ok());
  EXPECT_FALSE(JsonValidator::create(Json::parse(R"({"properties": {"a": {"pattern": "("}}})")).ok());
  EXPECT_EQ(validate("true", "1"), "");
  EXPECT_NE(validate("false", "1"), "");
}

}  // namespace
}  // namespace tokenmill::dataset
