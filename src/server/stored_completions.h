// OpenAI's stored completions: a chat request with "store": true keeps its request and
// answer in the data directory's database (state/batch_state.h), to be listed (by model
// and metadata), read, re-labelled and deleted through /v1/chat/completions.
#pragma once

#include <memory>

#include "server/http_types.h"
#include "server/json_fields.h"
#include "state/batch_state.h"

namespace tokenmill::server {

// out, storing a complete 200 chat.completion it answers (whole, or rebuilt from the
// stream's chunks) with request.
std::shared_ptr<Responder> storing_completion(std::shared_ptr<Responder> out, state::BatchState& state, Json request);

// A streamed chat answer (the SSE chunks) as the chat.completion object it adds up to.
Json completion_from_stream(const std::string& events);

}  // namespace tokenmill::server
