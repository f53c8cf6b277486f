// The few HTTP(S) requests a model download needs, on libcurl: a HEAD that reads the
// size and content hash a server (or a Hugging Face mirror) announces, a small GET for
// repository listings, and a resumable GET into a file. Redirects are followed; a
// connection that moves no bytes for a minute is given up.
//
// Thread-safety: each call is independent; curl_global_init runs once, on first use.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"

namespace tokenmill::store {

struct HttpHead {
  long status = 0;            // of the last response in the redirect chain
  int64_t size = -1;          // X-Linked-Size (Hugging Face's LFS size), else Content-Length; -1: unknown
  std::string sha256;         // the content's SHA-256 when a header gives it (X-Linked-Etag or ETag), else ""
  bool accepts_ranges = false;
};

// Extra request headers ("Authorization: Bearer ...").
using HeaderList = std::vector<std::string>;

// NotFound for 404, IoError for other failures (naming the URL and what went wrong).
Result<HttpHead> http_head(const std::string& url, const HeaderList& headers);

// A body of at most max_bytes.
Result<std::string> http_get_text(const std::string& url, const HeaderList& headers, size_t max_bytes);

// Called as bytes arrive with the file's size so far and the expected total (-1:
// unknown); returning false stops the transfer (Status kInternal "cancelled").
using ProgressFn = std::function<bool(int64_t done, int64_t total)>;

// Downloads url into path, resuming from the bytes path already has with a Range
// request (starting over when the server ignores Range). total is the expected size
// (-1: unknown). On error path keeps what arrived, for the next try to resume.
Status http_download(const std::string& url, const HeaderList& headers, const std::string& path, int64_t total,
                     const ProgressFn& progress);

}  // namespace tokenmill::store
