// The OpenAI and Ollama request parsers, JSON body to engine request, on the default
// model (its chat template and tokenizer, as the server has them). Input: one byte
// choosing the route, then the body. A parser may reject a body only with an ApiError
// of status 4xx; any other exception (the server would answer 500) or a request the
// engine then refuses to take is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "fuzz_input.h"
#include "model/model.h"
#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/ollama_request.h"
#include "server/openai_request.h"
#include "server/served_model.h"
#include "tokenizer/tokenizer.h"

using namespace tokenmill;

namespace {

struct Served {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<engine::Engine> engine;
  std::unique_ptr<server::ServedModel> served;
  engine::EngineConfig config;
};

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "fuzz_api_request: %s\n", message.c_str());
  std::abort();
}

const Served& served() {
  static const Served* s = [] {
    auto* out = new Served;
    const std::string path = fuzz::default_model_path();
    model::LoadOptions load;
    load.n_threads = 1;
    load.prefetch = false;
    load.repack = false;
    auto model = model::load_model(path, load);
    if (!model.ok()) die("cannot load " + path + ": " + model.status().to_string());
    out->model = std::move(model).value();
    auto tokenizer = tokenizer::Tokenizer::from_gguf(out->model->file());
    if (!tokenizer.ok()) die(tokenizer.status().to_string());
    out->tokenizer = std::move(tokenizer).value();
    out->config.ctx_total = 2048;
    out->config.max_context = 1024;
    out->engine = std::make_unique<engine::Engine>(*out->model, *out->tokenizer, out->config);
    out->served = std::make_unique<server::ServedModel>(path, *out->model, *out->tokenizer, *out->engine);
    return out;
  }();
  return *s;
}

void check_accepted(const engine::Request& request) {
  const Served& s = served();
  const Status status = engine::check_request(request, s.model->config().n_vocab, s.served->max_context(),
                                              static_cast<int64_t>(s.config.ctx_total));
  // The parsers bound max_tokens by the context; what is left to the engine (a prompt
  // longer than the cache, a prediction longer than the context) it refuses in words
  // that name it, and the server answers that as 400.
  const bool named = status.message().find("cache") != std::string::npos ||
                     status.message().find("prediction") != std::string::npos;
  if (!status.ok() && !named) {
    die("a parsed request was refused by the engine: " + status.to_string());
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  served();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const server::ServedModel& model = *served().served;
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    const server::Json json = server::parse_json_object(body);
    switch (data[0] % 4) {
      case 0: for (const auto& r : server::parse_chat_request(json, model).requests) check_accepted(r); break;
      case 1: for (const auto& r : server::parse_completion_request(json, model).requests) check_accepted(r); break;
      case 2: {
        const server::OllamaRequest r = server::parse_ollama_request(/*chat=*/true, json, model);
        if (!r.load_only) check_accepted(r.request);
        break;
      }
      default: {
        const server::OllamaRequest r = server::parse_ollama_request(/*chat=*/false, json, model);
        if (!r.load_only) check_accepted(r.request);
        break;
      }
    }
  } catch (const server::ApiError& e) {
    if (e.status < 400 || e.status >= 500) die("a bad body was answered " + std::to_string(e.status) + ": " + e.message);
  }
  return 0;
}
