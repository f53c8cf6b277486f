// multipart/form-data bodies (RFC 7578), as OpenAI's clients upload files: the boundary
// from the Content-Type header, then each part's name, filename and bytes. Parts point
// into the body. Malformed bodies are refused with a message naming what is wrong.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tokenmill::server {

struct FormPart {
  std::string name;
  std::string filename;  // "" for a plain field
  std::string_view data;
};

Result<std::vector<FormPart>> parse_multipart(const std::string& content_type, std::string_view body);

}  // namespace tokenmill::server
