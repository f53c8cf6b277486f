// Parsing the bodies of OpenAI's POST /v1/embeddings and Ollama's POST /api/embed and
// POST /api/embeddings into token ids for the embedder. Rejections are ApiErrors (400,
// 404 for a model the server does not embed with) that name the field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/json_fields.h"
#include "server/served_embeddings.h"

namespace tokenmill::server {

inline constexpr size_t kMaxEmbeddingInputs = 2048;  // OpenAI's limit per request

struct EmbeddingRequest {
  std::vector<std::vector<int32_t>> inputs;  // each [CLS] ... [SEP], within the model's positions
  bool base64 = false;                       // OpenAI encoding_format "base64"
  int32_t dimensions = 0;                    // 0: the model's
};

enum class EmbeddingApi { kOpenAi, kOllamaEmbed, kOllamaLegacy };

// The body's inputs for `model`, the one its "model" names (the caller has resolved the
// name). Throws ApiError. An input longer than the model's positions is a 400
// (context_length_exceeded), unless the API truncates it (Ollama's "truncate", true by
// default).
EmbeddingRequest parse_embedding_request(EmbeddingApi api, const Json& body, const ServedEmbeddings& model);

// Little-endian float32 bytes of v, base64-encoded (OpenAI's encoding_format "base64").
std::string base64_floats(const std::vector<float>& v);

}  // namespace tokenmill::server
