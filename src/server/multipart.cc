#include "server/multipart.h"

#include <algorithm>
#include <cctype>

namespace tokenmill::server {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// The value of parameter key in a header value such as `form-data; name="file"; filename="a.jsonl"`.
std::string parameter(std::string_view header, std::string_view key) {
  const std::string low = lower(header);
  size_t at = 0;
  while ((at = low.find(std::string(key) + "=", at)) != std::string::npos) {
    const bool starts = at == 0 || low[at - 1] == ' ' || low[at - 1] == ';';
    at += key.size() + 1;
    if (!starts) continue;
    if (at < header.size() && header[at] == '"') {
      const size_t end = header.find('"', at + 1);
      return std::string(header.substr(at + 1, end == std::string_view::npos ? end : end - at - 1));
    }
    const size_t end = header.find(';', at);
    std::string value(header.substr(at, end == std::string_view::npos ? end : end - at));
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
    return value;
  }
  return "";
}

}  // namespace

Result<std::vector<FormPart>> parse_multipart(const std::string& content_type, std::string_view body) {
  if (lower(content_type).find("multipart/form-data") == std::string::npos) {
    return invalid_argument("the upload must be multipart/form-data (with the fields 'file' and 'purpose')");
  }
  const std::string boundary = parameter(content_type, "boundary");
  if (boundary.empty() || boundary.size() > 70) return invalid_argument("the multipart boundary is missing or too long");
  const std::string delimiter = "--" + boundary;
  std::vector<FormPart> parts;
  size_t at = body.find(delimiter);
  if (at == std::string_view::npos) return invalid_argument("the multipart body has no part");
  while (true) {
    at += delimiter.size();
    if (body.substr(at, 2) == "--") break;  // the closing delimiter
    if (body.substr(at, 2) != "\r\n") return invalid_argument("malformed multipart delimiter line");
    at += 2;
    const size_t headers_end = body.find("\r\n\r\n", at);
    if (headers_end == std::string_view::npos) return invalid_argument("a multipart part has no end of headers");
    FormPart part;
    std::string_view headers = body.substr(at, headers_end - at);
    while (!headers.empty()) {
      const size_t eol = headers.find("\r\n");
      const std::string_view line = headers.substr(0, eol);
      headers = eol == std::string_view::npos ? std::string_view() : headers.substr(eol + 2);
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      if (lower(line.substr(0, colon)) == "content-disposition") {
        part.name = parameter(line.substr(colon + 1), "name");
        part.filename = parameter(line.substr(colon + 1), "filename");
      }
    }
    const size_t data_begin = headers_end + 4;
    const size_t next = body.find("\r\n" + delimiter, data_begin);
    if (next == std::string_view::npos) return invalid_argument("the multipart body ends inside a part (truncated?)");
    part.data = body.substr(data_begin, next - data_begin);
    parts.push_back(part);
    at = next + 2;
  }
  return parts;
}

}  // namespace tokenmill::server
