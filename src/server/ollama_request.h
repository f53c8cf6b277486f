// Parsing and validating the bodies of Ollama's /api/chat and /api/generate into an
// engine Request, with Ollama's sampling defaults (temperature 0.8, top_k 40, top_p 0.9,
// repeat_penalty 1.1 over the last 64 tokens). Rejections are ApiErrors as for OpenAI.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "engine/request.h"
#include "server/json_fields.h"
#include "server/served_model.h"
#include "server/tool_calls.h"

namespace tokenmill::server {

struct OllamaRequest {
  engine::Request request;
  bool stream = true;
  bool chat = false;
  bool load_only = false;  // an empty generate prompt: Ollama answers done_reason "load"
  // /api/chat with tools: how to read the calls back out of the answer.
  std::optional<ToolRequest> tools;
  ToolSyntax tool_syntax = ToolSyntax::kBuiltin;
  // Whether a reasoning span (request.reasoning) is returned as "thinking", or dropped.
  bool include_reasoning = true;
  // Chat with a harmony model (server/harmony_chat.h), and ChatPrompt's harmony_prefix.
  bool harmony = false;
  std::string harmony_prefix;
};

// The model an Ollama request names ("model", or "name" from older clients). Throws
// ApiError 400 when neither is a string.
std::string ollama_model_name(const Json& body);
// The request's keep_alive: seconds as a number, or a duration ("5m", "1h", "-1");
// nullopt when absent; negative: forever. Throws ApiError 400 when malformed.
std::optional<std::chrono::milliseconds> ollama_keep_alive(const Json& body);

// True when the request has nothing to generate from (no messages, or an empty prompt):
// Ollama's way to load, or with keep_alive 0 unload, a model.
bool is_load_only(bool chat, const Json& body);

// Throws ApiError. chat: /api/chat (messages), else /api/generate (prompt).
OllamaRequest parse_ollama_request(bool chat, const Json& body, const ServedModel& model);

}  // namespace tokenmill::server
