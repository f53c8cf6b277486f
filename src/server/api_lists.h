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

// 404 invalid_request_error with the status's message.
ApiError not_found_error(const Status& status);

// The query's "limit": fallback when absent; 400 unless an integer in [1, max].
int64_t limit_param(const QueryPairs& query, int64_t fallback, int64_t max);

// OpenAI's metadata: at most 16 pairs, keys of at most 64 characters, string values of at
// most 512. Throws ApiError 400 naming "metadata".
void check_metadata(const Json& metadata);

}  // namespace tokenmill::server
