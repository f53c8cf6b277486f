// GET /v1/chat/completions, GET/POST/DELETE /v1/chat/completions/{id},
// GET /v1/chat/completions/{id}/messages, and the Responder that stores answers.
#include "server/stored_completions.h"

#include <algorithm>
#include <map>

#include "server/api_error.h"
#include "server/api_lists.h"
#include "server/query_string.h"
#include "server/route_context.h"

namespace tokenmill::server {

namespace {

class StoringResponder : public Responder {
 public:
  StoringResponder(std::shared_ptr<Responder> inner, state::BatchState& state, Json request)
      : inner_(std::move(inner)), state_(state), request_(std::move(request)) {}

  void send(int status, const std::string& content_type, std::string body, const HeaderList& extra) override {
    if (status == 200) store(Json::parse(body, nullptr, false));
    inner_->send(status, content_type, std::move(body), extra);
  }
  void begin_stream(int status, const std::string& content_type, const HeaderList& extra) override {
    recording_ = status == 200;
    inner_->begin_stream(status, content_type, extra);
  }
  void write_chunk(std::string data) override {
    if (recording_) events_ += data;
    inner_->write_chunk(std::move(data));
  }
  void end_stream() override {
    if (recording_) store(completion_from_stream(events_));
    inner_->end_stream();
  }
  void post(std::function<void()> fn) override { inner_->post(std::move(fn)); }
  void watch_disconnect(std::function<void()> on_gone) override { inner_->watch_disconnect(std::move(on_gone)); }
  bool connected() const override { return inner_->connected(); }

 private:
  void store(const Json& completion) {
    if (!completion.is_object() || !completion.contains("id")) return;
    state::StoredCompletion c;
    c.id = completion["id"].get<std::string>();
    c.model = completion.value("model", std::string());
    c.created_at = completion.value("created", int64_t{0});
    const Json metadata = request_.contains("metadata") && request_["metadata"].is_object() ? request_["metadata"]
                                                                                             : Json::object();
    c.metadata = metadata.dump();
    c.request = request_.dump();
    c.response = completion.dump();
    (void)state_.put_completion(c);
  }

  std::shared_ptr<Responder> inner_;
  state::BatchState& state_;
  const Json request_;
  bool recording_ = false;
  std::string events_;
};

state::BatchState& stored_state(const RouteContext& context) {
  if (context.batch_state == nullptr) {
    throw ApiError{404, "Stored completions need the server's data directory (--data-dir)", "invalid_request_error",
                   "", ""};
  }
  return *context.batch_state;
}

// The stored answer as the API returns it: the chat.completion with its metadata.
Json completion_json(const state::StoredCompletion& c) {
  Json out = Json::parse(c.response, nullptr, false);
  if (!out.is_object()) out = Json::object();
  out["metadata"] = Json::parse(c.metadata, nullptr, false);
  out["request_id"] = c.id;
  return out;
}

bool newest_first(const QueryPairs& query) {
  const std::string order = query_value(query, "order");
  if (!order.empty() && order != "asc" && order != "desc") throw bad_request("'order' must be asc or desc", "order");
  return order != "asc";
}

}  // namespace

Json completion_from_stream(const std::string& events) {
  Json out;
  std::map<int64_t, Json> choices;
  size_t at = 0;
  while ((at = events.find("data: ", at)) != std::string::npos) {
    at += 6;
    const size_t end = events.find("\n\n", at);
    const std::string data = events.substr(at, end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? events.size() : end;
    if (data == "[DONE]") break;
    const Json chunk = Json::parse(data, nullptr, false);
    if (!chunk.is_object()) continue;
    if (out.is_null()) {
      out = {{"id", chunk.value("id", std::string())}, {"object", "chat.completion"},
             {"created", chunk.value("created", int64_t{0})}, {"model", chunk.value("model", std::string())}};
    }
    if (chunk.contains("usage") && chunk["usage"].is_object()) out["usage"] = chunk["usage"];
    if (!chunk.contains("choices") || !chunk["choices"].is_array()) continue;
    for (const Json& delta_choice : chunk["choices"]) {
      const int64_t index = delta_choice.value("index", int64_t{0});
      Json& choice = choices[index];
      if (choice.is_null()) {
        choice = {{"index", index}, {"message", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr},
                  {"finish_reason", nullptr}};
      }
      // The text fields add up; a thinking model's reasoning_content is kept as well.
      for (const char* field : {"content", "reasoning_content"}) {
        if (!delta_choice.contains("delta") || !delta_choice["delta"].contains(field) ||
            !delta_choice["delta"][field].is_string()) {
          continue;
        }
        Json& so_far = choice["message"][field];
        so_far = (so_far.is_string() ? so_far.get<std::string>() : std::string()) +
                 delta_choice["delta"][field].get<std::string>();
      }
      if (delta_choice.contains("finish_reason") && !delta_choice["finish_reason"].is_null()) {
        choice["finish_reason"] = delta_choice["finish_reason"];
      }
    }
  }
  if (out.is_null()) return out;
  Json list = Json::array();
  for (auto& [index, choice] : choices) list.push_back(std::move(choice));
  out["choices"] = std::move(list);
  return out;
}

std::shared_ptr<Responder> storing_completion(std::shared_ptr<Responder> out, state::BatchState& state, Json request) {
  return std::make_shared<StoringResponder>(std::move(out), state, std::move(request));
}

void add_stored_completion_routes(Router& router, const RouteContext& context) {
  router.add("GET", "/v1/chat/completions", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    state::BatchState& state = stored_state(context);
    const QueryPairs query = parse_query(request.query);
    std::vector<std::pair<std::string, std::string>> metadata;
    for (const auto& [key, value] : query) {
      if (key.starts_with("metadata[") && key.ends_with("]")) metadata.emplace_back(key.substr(9, key.size() - 10), value);
    }
    const int64_t limit = limit_param(query, 20, 100);
    const auto rows = state.list_completions(query_value(query, "model"), metadata, query_value(query, "after"),
                                             limit + 1, newest_first(query));
    Json data = Json::array();
    for (size_t i = 0; i < rows.size() && static_cast<int64_t>(i) < limit; ++i) data.push_back(completion_json(rows[i]));
    out->send(200, "application/json", dump_json(list_page(data, static_cast<int64_t>(rows.size()) > limit)));
  });
  router.add_prefix("GET", "/v1/chat/completions/", [&context](const HttpRequest& request,
                                                              std::shared_ptr<Responder> out) {
    state::BatchState& state = stored_state(context);
    std::string id = request.path.substr(std::string("/v1/chat/completions/").size());
    const bool messages = id.ends_with("/messages");
    if (messages) id.resize(id.size() - std::string("/messages").size());
    const auto stored = state.completion(id);
    if (!stored.ok()) throw state_error(stored.status());
    if (!messages) {
      out->send(200, "application/json", dump_json(completion_json(*stored)));
      return;
    }
    const Json body = Json::parse(stored->request, nullptr, false);
    const QueryPairs query = parse_query(request.query);
    const int64_t limit = limit_param(query, 20, 100);
    Json all = Json::array();
    if (body.is_object() && body.contains("messages") && body["messages"].is_array()) {
      int64_t i = 0;
      for (const Json& m : body["messages"]) {
        Json message = {{"id", id + "-" + std::to_string(i++)}, {"role", m.value("role", std::string("user"))},
                        {"content", m.contains("content") ? m["content"] : Json(nullptr)}, {"content_parts", nullptr}};
        if (m.contains("name")) message["name"] = m["name"];
        all.push_back(std::move(message));
      }
    }
    // Oldest first unless asked: the order of the conversation.
    if (query_value(query, "order") == "desc") std::reverse(all.begin(), all.end());
    const std::string after = query_value(query, "after");
    size_t start = 0;
    if (!after.empty()) {
      while (start < all.size() && all[start]["id"] != after) ++start;
      start = start < all.size() ? start + 1 : all.size();
    }
    Json data = Json::array();
    for (size_t i = start; i < all.size() && static_cast<int64_t>(data.size()) < limit; ++i) data.push_back(all[i]);
    out->send(200, "application/json", dump_json(list_page(data, start + data.size() < all.size())));
  });
  router.add_prefix("POST", "/v1/chat/completions/", [&context](const HttpRequest& request,
                                                               std::shared_ptr<Responder> out) {
    state::BatchState& state = stored_state(context);
    const std::string id = request.path.substr(std::string("/v1/chat/completions/").size());
    const Json body = parse_json_object(request.body);
    const Json* metadata = Fields(body).object("metadata");
    if (metadata == nullptr) throw bad_request("'metadata' (an object) is required", "metadata");
    check_metadata(*metadata);
    if (Status s = state.update_completion_metadata(id, metadata->dump()); !s.ok()) throw state_error(s);
    out->send(200, "application/json", dump_json(completion_json(*state.completion(id))));
  });
  router.add_prefix("DELETE", "/v1/chat/completions/", [&context](const HttpRequest& request,
                                                                 std::shared_ptr<Responder> out) {
    state::BatchState& state = stored_state(context);
    const std::string id = request.path.substr(std::string("/v1/chat/completions/").size());
    if (Status s = state.delete_completion(id); !s.ok()) throw state_error(s);
    out->send(200, "application/json",
              dump_json(Json{{"object", "chat.completion.deleted"}, {"id", id}, {"deleted", true}}));
  });
}

}  // namespace tokenmill::server
