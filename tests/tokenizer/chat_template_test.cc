// Chat templates rendered by our Jinja interpreter, compared byte for byte with what
// Python's jinja2 renders in HF's configuration (tools/make_template_fixtures.py).
#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gguf/gguf_writer.h"
#include "tokenizer/chat_template_builtins.h"

namespace tokenmill::tokenizer {
namespace {

using nlohmann::ordered_json;

// TOKENMILL_CHAT_TEMPLATE_FIXTURES points the fixture test at another directory of the same
// format: tools/check_published_templates.py uses it for templates we do not commit.
std::filesystem::path fixture_dir() {
  if (const char* other = std::getenv("TOKENMILL_CHAT_TEMPLATE_FIXTURES"); other != nullptr && *other != '\0') return other;
  return std::filesystem::path(TOKENMILL_FIXTURES_DIR) / "chat_templates";
}

ordered_json load(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return ordered_json::parse(text.str());
}

std::vector<std::string> fixture_names() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(fixture_dir())) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class ChatTemplateFixture : public testing::TestWithParam<std::string> {};

TEST_P(ChatTemplateFixture, MatchesJinja2) {
  ordered_json fixture = load(fixture_dir() / (GetParam() + ".json"));
  auto parsed = ChatTemplate::parse(fixture["template"].get<std::string>());
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  const std::string bos = fixture["bos_token"];
  const std::string eos = fixture["eos_token"];
  ASSERT_FALSE(fixture["cases"].empty());
  for (const auto& c : fixture["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    bool add_generation_prompt = c["add_generation_prompt"];

    // The general path: messages as JSON (tool calls and all) plus extra variables.
    jinja::Dict variables{
        {"messages", jinja::Value::from_json(c["messages"])},
        {"add_generation_prompt", jinja::Value(add_generation_prompt)},
        {"bos_token", jinja::Value(bos)},
        {"eos_token", jinja::Value(eos)},
    };
    if (c.contains("extra_variables")) {
      for (const auto& [key, value] : c["extra_variables"].items()) variables.emplace_back(key, jinja::Value::from_json(value));
    }
    Result<std::string> rendered = parsed->render_variables(variables);

    // The plain path, when every message is just role and content.
    bool plain = !c.contains("extra_variables");
    std::vector<ChatMessage> messages;
    for (const auto& m : c["messages"]) {
      plain = plain && m.size() == 2 && m.contains("role") && m.contains("content") && m["content"].is_string();
      if (plain) messages.push_back({m["role"], m["content"]});
    }

    if (c.contains("error")) {
      ASSERT_FALSE(rendered.ok()) << "expected the template to raise: " << c["error"];
      EXPECT_NE(rendered.status().message().find(c["error"].get<std::string>()), std::string::npos)
          << rendered.status().message();
      EXPECT_NE(rendered.status().message().find("raise_exception"), std::string::npos);
      if (plain) {
        EXPECT_FALSE(parsed->render(messages, add_generation_prompt, bos, eos).ok());
      }
      continue;
    }
    ASSERT_TRUE(rendered.ok()) << rendered.status().to_string();
    EXPECT_EQ(*rendered, c["expected"].get<std::string>());
    if (plain) {
      Result<std::string> simple = parsed->render(messages, add_generation_prompt, bos, eos);
      ASSERT_TRUE(simple.ok()) << simple.status().to_string();
      EXPECT_EQ(*simple, c["expected"].get<std::string>());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ChatTemplateFixture, testing::ValuesIn(fixture_names()),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(ChatTemplate, FixturesExist) {
  // The built-ins are always among the fixtures, so a missing directory cannot pass silently.
  auto names = fixture_names();
  for (const char* name : {"builtin_gemma", "builtin_chatml", "builtin_llama3"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
}

TEST(ChatTemplate, GemmaBuiltinShape) {
  auto t = ChatTemplate::parse(std::string(kGemmaChatTemplate));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  auto out = t->render({{"system", "Sys"}, {"user", " Hi "}, {"assistant", "Hello"}, {"user", "Bye"}}, true,
                       "<bos>", "<eos>");
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out,
            "<bos><start_of_turn>user\nSys\n\nHi<end_of_turn>\n"
            "<start_of_turn>model\nHello<end_of_turn>\n"
            "<start_of_turn>user\nBye<end_of_turn>\n"
            "<start_of_turn>model\n");
  auto bad = t->render({{"user", "a"}, {"user", "b"}}, false, "<bos>", "<eos>");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("Conversation roles must alternate"), std::string::npos);
}

TEST(ChatTemplate, ParseErrorIsInvalidArgument) {
  auto t = ChatTemplate::parse("{% for x in y %}never closed");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("endfor"), std::string::npos) << t.status().message();
}

// A tiny GGUF with only the metadata chat_template_for_model reads.
gguf::File parse_gguf(const gguf::Writer& writer, std::vector<uint8_t>* bytes) {
  auto written = writer.to_bytes();
  EXPECT_TRUE(written.ok()) << written.status().to_string();
  *bytes = std::move(written.value());
  auto file = gguf::File::parse(*bytes);
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  return std::move(file.value());
}

TEST(ChatTemplateForModel, PrefersEmbeddedTemplate) {
  gguf::Writer w;
  w.set_string("tokenizer.chat_template", "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}");
  w.set_strings("tokenizer.ggml.tokens", {"<start_of_turn>", "a"});
  std::vector<uint8_t> bytes;
  gguf::File file = parse_gguf(w, &bytes);
  auto t = chat_template_for_model(file);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(*t->render({{"user", "hi"}}, false, "", ""), "[user]hi");
}

TEST(ChatTemplateForModel, ChoosesBuiltinByVocabulary) {
  const std::pair<const char*, std::string_view> cases[] = {
      {"<start_of_turn>", kGemmaChatTemplate},
      {"<|im_start|>", kChatMlChatTemplate},
      {"<|start_header_id|>", kLlama3ChatTemplate},
  };
  for (const auto& [token, expected] : cases) {
    gguf::Writer w;
    w.set_strings("tokenizer.ggml.tokens", {"<pad>", token, "b"});
    std::vector<uint8_t> bytes;
    gguf::File file = parse_gguf(w, &bytes);
    auto t = chat_template_for_model(file);
    ASSERT_TRUE(t.ok()) << token << ": " << t.status().to_string();
    EXPECT_EQ(t->source(), expected) << token;
  }
}

TEST(ChatTemplateForModel, NotFoundWithoutTemplateOrTurnTokens) {
  gguf::Writer w;
  w.set_strings("tokenizer.ggml.tokens", {"a", "b"});
  std::vector<uint8_t> bytes;
  gguf::File file = parse_gguf(w, &bytes);
  auto t = chat_template_for_model(file);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace tokenmill::tokenizer
