#include "dataset/exchanges.h"

#include <algorithm>
#include <fstream>

namespace tokenmill::dataset {

namespace {

// A choice's logprobs as per-token lists of {token, logprob}: its top alternatives (the
// chosen token alone when it came without them).
Json token_rows(const Json& logprobs) {
  if (!logprobs.is_object()) return nullptr;
  Json rows = Json::array();
  if (const auto content = logprobs.find("content"); content != logprobs.end() && content->is_array()) {
    for (const Json& token : *content) {
      Json row = Json::array();
      const Json top = token.value("top_logprobs", Json::array());
      for (const Json& t : top) row.push_back({{"token", t.value("token", "")}, {"logprob", t.value("logprob", 0.0)}});
      if (row.empty()) row.push_back({{"token", token.value("token", "")}, {"logprob", token.value("logprob", 0.0)}});
      rows.push_back(std::move(row));
    }
    return rows;
  }
  // The completions' legacy columns: top_logprobs is one {token: logprob} per position.
  const Json tokens = logprobs.value("tokens", Json::array());
  const Json top = logprobs.value("top_logprobs", Json::array());
  const Json chosen = logprobs.value("token_logprobs", Json::array());
  for (size_t i = 0; i < tokens.size(); ++i) {
    Json row = Json::array();
    if (i < top.size() && top[i].is_object()) {
      for (auto it = top[i].begin(); it != top[i].end(); ++it) row.push_back({{"token", it.key()}, {"logprob", *it}});
      std::sort(row.begin(), row.end(), [](const Json& a, const Json& b) { return a["logprob"] > b["logprob"]; });
    }
    if (row.empty() && i < chosen.size()) row.push_back({{"token", tokens[i]}, {"logprob", chosen[i]}});
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

Result<std::vector<Prompt>> read_prompts(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read the prompts file '" + path + "'");
  std::vector<Prompt> prompts;
  std::string errors;
  int n_errors = 0;
  std::string text;
  int64_t line = 0;
  auto error = [&](const std::string& message) {
    if (++n_errors <= 20) errors += "\nline " + std::to_string(line) + ": " + message;
  };
  while (std::getline(in, text)) {
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const Json j = Json::parse(text, nullptr, false);
    if (!j.is_object()) {
      error("not a JSON object (or not UTF-8)");
      continue;
    }
    Prompt p;
    p.messages = Json::array();
    if (j.contains("system") && j["system"].is_string()) p.messages.push_back({{"role", "system"}, {"content", j["system"]}});
    if (j.contains("messages")) {
      if (!j["messages"].is_array() || j["messages"].empty()) {
        error("'messages' must be a list of messages");
        continue;
      }
      for (const Json& m : j["messages"]) p.messages.push_back(m);
    } else if (j.contains("prompt") && j["prompt"].is_string()) {
      p.messages.push_back({{"role", "user"}, {"content", j["prompt"]}});
    } else if (j.contains("instruction") && j["instruction"].is_string()) {
      p.instruction = j["instruction"].get<std::string>();
      p.input = j.value("input", "");
      p.messages.push_back({{"role", "user"}, {"content", p.input.empty() ? p.instruction : p.instruction + "\n\n" + p.input}});
    } else {
      error("needs 'messages', 'prompt' or 'instruction'");
      continue;
    }
    prompts.push_back(std::move(p));
  }
  if (n_errors > 0) return invalid_argument(path + ":" + errors);
  if (prompts.empty()) return invalid_argument(path + " has no prompts");
  return prompts;
}

Json teacher_request(const std::string& custom_id, const Prompt& prompt, const TeacherParams& params) {
  Json body = {{"model", "teacher"},
               {"messages", prompt.messages},
               {"n", params.samples},
               {"max_tokens", params.max_tokens},
               {"temperature", params.temperature},
               {"top_p", params.top_p}};
  if (params.seed >= 0) body["seed"] = params.seed;
  if (params.top_logprobs > 0) {
    body["logprobs"] = true;
    body["top_logprobs"] = params.top_logprobs;
    body["return_tokens_as_token_ids"] = true;
  }
  return {{"custom_id", custom_id}, {"method", "POST"}, {"url", "/v1/chat/completions"}, {"body", std::move(body)}};
}

std::vector<Example> examples_from_exchange(const std::string& source, const Json& request, const Json& response) {
  std::vector<Example> out;
  if (!response.is_object() || !response.contains("choices") || !response["choices"].is_array()) return out;
  Json messages = Json::array();
  if (request.contains("messages") && request["messages"].is_array()) {
    messages = request["messages"];
  } else if (request.contains("prompt") && request["prompt"].is_string()) {
    messages.push_back({{"role", "user"}, {"content", request["prompt"]}});
  } else {
    return out;  // a list of prompts, or token ids: no one conversation to train on
  }
  for (const Json& choice : response["choices"]) {
    Example e;
    e.source = source + "#" + std::to_string(choice.value("index", 0));
    e.messages = messages;
    if (choice.contains("message") && choice["message"].is_object()) {
      const Json content = choice["message"].value("content", Json());
      if (!content.is_string()) continue;  // a tool call, not an answer
      e.answer = content.get<std::string>();
      const Json reasoning = choice["message"].value("reasoning_content", Json());
      if (reasoning.is_string()) e.reasoning = reasoning.get<std::string>();
    } else if (choice.contains("text") && choice["text"].is_string()) {
      e.answer = choice["text"].get<std::string>();
    } else {
      continue;
    }
    e.finish_reason = choice.value("finish_reason", Json("")).is_string() ? choice.value("finish_reason", "") : "";
    e.logprobs = token_rows(choice.value("logprobs", Json()));
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace tokenmill::dataset
