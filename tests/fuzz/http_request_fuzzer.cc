// The HTTP/1.1 request reader with the server's limits (Beast's parser, our header-field
// limit and the conversion to HttpRequest), on small limits so the fuzzer reaches them.
// Uploads (POST /v1/files) take the spooling path into a scratch directory. Checked beyond
// memory safety: an accepted request respects every limit, and a refused or cut-short
// upload leaves no spool file behind.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <variant>

#include "server/http_request_parser.h"

using namespace tokenmill;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string spool_dir = [] {
    std::string dir = (std::filesystem::temp_directory_path() / "tokenmill-fuzz-spool-XXXXXX").string();
    if (::mkdtemp(dir.data()) == nullptr) std::abort();
    return dir;
  }();
  server::HttpLimits limits;
  limits.max_body_bytes = 4096;
  limits.max_upload_bytes = 8192;
  limits.max_header_bytes = 2048;
  limits.max_header_fields = 16;
  limits.upload_spool_dir = spool_dir;
  auto parsed = server::parse_http_request(std::string_view(reinterpret_cast<const char*>(data), size), limits);
  if (parsed) {
    if (const auto* request = std::get_if<server::HttpRequest>(&*parsed)) {
      const bool within = request->body_file ? request->body_file->size() <= limits.max_upload_bytes
                                             : request->body.size() <= limits.max_body_bytes;
      if (!within || request->headers.size() > limits.max_header_fields || request->method.empty()) {
        std::fprintf(stderr, "fuzz_http_request: a request past the limits was accepted\n");
        std::abort();
      }
    } else {
      const int status = std::get<server::HttpRejection>(*parsed).status;
      if (status != 400 && status != 413 && status != 431 && status != 507) std::abort();
    }
  }
  parsed.reset();  // an accepted upload's spool file goes with its request
  if (!std::filesystem::is_empty(spool_dir)) {
    std::fprintf(stderr, "fuzz_http_request: an upload's spool file outlived its request\n");
    std::abort();
  }
  return 0;
}
