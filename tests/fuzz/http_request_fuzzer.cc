// The HTTP/1.1 request reader with the server's limits (Beast's parser, our header-field
// limit and the conversion to HttpRequest), on small limits so the fuzzer reaches them.
// Checked beyond memory safety: an accepted request respects every limit.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <variant>

#include "server/http_request_parser.h"

using namespace tokenmill;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const server::HttpLimits limits{/*max_body_bytes=*/4096, /*max_header_bytes=*/2048, /*max_header_fields=*/16};
  const auto parsed = server::parse_http_request(std::string_view(reinterpret_cast<const char*>(data), size), limits);
  if (!parsed) return 0;
  if (const auto* request = std::get_if<server::HttpRequest>(&*parsed)) {
    if (request->body.size() > limits.max_body_bytes || request->headers.size() > limits.max_header_fields ||
        request->method.empty()) {
      std::fprintf(stderr, "fuzz_http_request: a request past the limits was accepted\n");
      std::abort();
    }
  } else {
    const int status = std::get<server::HttpRejection>(*parsed).status;
    if (status != 400 && status != 413 && status != 431) std::abort();
  }
  return 0;
}
