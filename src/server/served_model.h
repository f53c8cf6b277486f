// The one model a server answers for, and what the routes need to know about it: its
// names, how to turn messages or text into prompt tokens, and descriptive details for
// /v1/models and Ollama's /api/tags, /api/show, /api/ps.
//
// Thread-safety: immutable after construction; every method may run on many threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "gguf/file_summary.h"
#include "engine/engine.h"
#include "model/model.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::server {

class ServedModel {
 public:
  // REQUIRES: model, tokenizer and engine outlive this object. name: what it is called
  // ("" : the GGUF file's basename without extension). chat_template: a Jinja template
  // to use in place of the model's own ("": the model's).
  ServedModel(const std::string& path, model::Model& model, const tokenizer::Tokenizer& tokenizer,
              engine::Engine& engine, std::string name = "", std::string chat_template = "");

  // The name requests use: a store name ("gemma3:latest"), or the file's basename
  // without extension ("gemma-3-270m-q4_k_m").
  const std::string& name() const { return name_; }
  // True for name(), "default" and "tokenmill", and with Ollama's implicit tag, name()
  // + ":latest" or name() without its ":latest".
  bool answers_to(std::string_view requested) const;

  engine::Engine& engine() const { return *engine_; }
  const tokenizer::Tokenizer& tokenizer() const { return *tokenizer_; }
  const model::Model& model() const { return *model_; }
  // Prompt plus generated tokens of one sequence.
  int32_t max_context() const { return max_context_; }

  // Messages given as JSON (assistant tool_calls, tool messages: whatever the template
  // reads) rendered with the model's chat template, with the assistant's opening header;
  // tools: null for none; variables: an object of more template variables
  // (chat_template_kwargs, enable_thinking, ...), which never replace the ones set here.
  // InvalidArgument if the template rejects the messages; NotFound if the model has no
  // chat template.
  Result<std::string> chat_text(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                const nlohmann::ordered_json& variables) const;
  // A rendered chat prompt as tokens: special tokens parsed and nothing added (the
  // template writes BOS itself).
  std::vector<int32_t> chat_tokens(std::string_view text) const;
  // Plain text as a prompt: BOS added as the vocabulary asks, special tokens parsed.
  std::vector<int32_t> text_prompt(std::string_view text) const;

  // The chat template's source ("" if none), valid as long as this object.
  std::string_view chat_template_source() const;
  // Whether chats are rendered and read back in the harmony format (gpt-oss: its
  // vocabulary speaks harmony and no --chat-template replaces the model's own).
  bool speaks_harmony() const { return speaks_harmony_; }

  // Descriptions.
  const std::string& path() const { return path_; }
  int64_t file_size() const { return file_size_; }
  int64_t modified_unix() const { return modified_unix_; }  // the file's mtime
  const std::string& architecture() const { return architecture_; }
  int64_t parameter_count() const { return parameter_count_; }
  std::string parameter_size() const;      // "268.10M"
  std::string quantization_level() const;  // "Q4_K_M", from general.file_type

 private:
  std::string path_;
  std::string name_;
  model::Model* model_;
  const tokenizer::Tokenizer* tokenizer_;
  engine::Engine* engine_;
  std::optional<tokenizer::ChatTemplate> chat_template_;
  std::string chat_template_error_;
  bool speaks_harmony_ = false;
  int32_t max_context_ = 0;
  int64_t file_size_ = 0;
  int64_t modified_unix_ = 0;
  std::string architecture_;
  int64_t parameter_count_ = 0;
};

}  // namespace tokenmill::server
