// Pieces the list-and-object routes of the Files, Batches and stored-completions APIs
// share: OpenAI's list page, its 404, the limit parameter and the metadata rule.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/query_string.h"

namespace tokenmill::server {

// {"object": "list", data, first_id, last_id, has_more}.
Json list_page(Json data, bool has_more);

// What a failed read or write of the state answers, with the status's message: 404
// invalid_request_error for NotFound, 507 insufficient_storage for ResourceExhausted (a
// full disk), else 500.
ApiError state_error(const Status& status);

// The query's "limit": fallback when absent; 400 unless an integer in [1, max].
int64_t limit_param(const QueryPairs& query, int64_t fallback, int64_t max);

// OpenAI's metadata: at most 16 pairs, keys of at most 64 characters, string values of at
// most 512. Throws ApiError 400 naming "metadata".
void check_metadata(const Json& metadata);

}  // namespace tokenmill::server
