// POST /v1/embeddings (OpenAI), POST /api/embed and POST /api/embeddings (Ollama): the
// embedding model given with --embedding-model (or -m), or one of the model store's by
// name, its requests batched by its embedder.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/embedding_request.h"
#include "server/ollama_request.h"
#include "server/route_context.h"

namespace tokenmill::server {

namespace {

Json float_list(const std::vector<float>& v) {
  Json out = Json::array();
  for (float x : v) out.push_back(static_cast<double>(x));
  return out;
}

Json openai_body(const EmbeddingRequest& request, const engine::EmbeddingResult& result, const std::string& model) {
  Json data = Json::array();
  for (size_t i = 0; i < result.vectors.size(); ++i) {
    data.push_back({{"object", "embedding"},
                    {"index", i},
                    {"embedding", request.base64 ? Json(base64_floats(result.vectors[i])) : float_list(result.vectors[i])}});
  }
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", model},
          {"usage", {{"prompt_tokens", result.n_tokens}, {"total_tokens", result.n_tokens}}}};
}

Json ollama_body(EmbeddingApi api, const engine::EmbeddingResult& result, const std::string& model,
                 std::chrono::steady_clock::duration took) {
  if (api == EmbeddingApi::kOllamaLegacy) return {{"embedding", float_list(result.vectors.front())}};
  Json embeddings = Json::array();
  for (const auto& v : result.vectors) embeddings.push_back(float_list(v));
  return {{"model", model},
          {"embeddings", std::move(embeddings)},
          {"total_duration", std::chrono::duration_cast<std::chrono::nanoseconds>(took).count()},
          {"load_duration", 0},
          {"prompt_eval_count", result.n_tokens}};
}

// Parses one request body (throwing ApiError when it is refused) and returns what
// submits it to the embedder, answering on out as the route at path does.
std::function<void()> prepare_embedding(EmbeddingApi api, const RouteContext& context, const Json& json,
                                        const std::shared_ptr<Responder>& out, const std::string& path) {
  const std::string name = Fields(json).string("model").value_or("");
  if (name.empty()) throw bad_request("'model' is required", "model");
  const ServedEmbeddings* model = context.embeddings;
  EmbeddingsLease lease;  // a store model stays loaded until its answer is sent
  if (model == nullptr || !model->answers_to(name)) {
    if (context.models.store() != nullptr && context.models.knows(name)) {
      lease = acquire_embedding_model(
          context, name, api == EmbeddingApi::kOpenAi ? std::nullopt : ollama_keep_alive(json));
      model = lease.get();
    } else if (model == nullptr && context.models.store() == nullptr) {
      throw bad_request("This server has no embedding model: start tokenmill serve with --embedding-model FILE.gguf, "
                        "or import one into its model store",
                        "model", "model_not_found");
    } else {
      throw model_not_found(name);
    }
  }
  auto parsed = std::make_shared<EmbeddingRequest>(parse_embedding_request(api, json, *model));
  return [api, &context, out, path, parsed, model, lease] {
    const auto start = std::chrono::steady_clock::now();
    context.calls.add();  // shutdown waits for the answer
    model->embedder.submit(parsed->inputs, [api, &context, out, path, parsed, model, lease,
                                            start](engine::EmbeddingResult result) {
      out->post([api, &context, out, path, parsed, model, lease, start, result = std::move(result)] {
        if (!result.status.ok()) {
          send_error(*out, path, unavailable("Embedding failed: " + result.status.message()));
        } else if (api == EmbeddingApi::kOpenAi) {
          out->send(200, "application/json", dump_json(openai_body(*parsed, result, model->name)));
        } else {
          out->send(200, "application/json",
                    dump_json(ollama_body(api, result, model->name, std::chrono::steady_clock::now() - start)));
        }
        context.calls.remove();
      });
    });
  };
}

void handle_embeddings(EmbeddingApi api, const RouteContext& context, const HttpRequest& request,
                       const std::shared_ptr<Responder>& out) {
  prepare_then(context, request.path, out, [api, &context, out, path = request.path, body = request.body] {
    return prepare_embedding(api, context, parse_json_object(body), out, path);
  });
}

}  // namespace

void start_embedding_request(const RouteContext& context, const Json& body, std::shared_ptr<Responder> out) {
  std::function<void()> start = prepare_embedding(EmbeddingApi::kOpenAi, context, body, out, "/v1/embeddings");
  out->post(std::move(start));
}

void add_embedding_routes(Router& router, const RouteContext& context) {
  const std::pair<const char*, EmbeddingApi> routes[] = {{"/v1/embeddings", EmbeddingApi::kOpenAi},
                                                          {"/api/embed", EmbeddingApi::kOllamaEmbed},
                                                          {"/api/embeddings", EmbeddingApi::kOllamaLegacy}};
  for (const auto& route : routes) {
    const EmbeddingApi api = route.second;
    router.add("POST", route.first, [api, &context](const HttpRequest& request, std::shared_ptr<Responder> out) {
      handle_embeddings(api, context, request, out);
    });
  }
}

}  // namespace tokenmill::server
