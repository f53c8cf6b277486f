// A Responder that adds fixed headers to whatever answer the one it wraps gives: the CORS
// headers, the replica id.
#pragma once

#include <memory>

#include "server/http_types.h"

namespace tokenmill::server {

// out, with headers appended to the headers of its answer (a whole one or a stream).
std::shared_ptr<Responder> with_headers(std::shared_ptr<Responder> out, HeaderList headers);

}  // namespace tokenmill::server
