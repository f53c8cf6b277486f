#include "store/model_name.h"

#include <cctype>

namespace tokenmill::store {

namespace {

constexpr size_t kMaxPart = 128;
constexpr int kMaxParts = 3;

// One path component: [A-Za-z0-9][A-Za-z0-9._-]*, at most kMaxPart characters.
bool valid_part(std::string_view part) {
  if (part.empty() || part.size() > kMaxPart) return false;
  if (!std::isalnum(static_cast<unsigned char>(part[0]))) return false;
  for (char c : part) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

}  // namespace

Result<ModelName> parse_model_name(std::string_view text) {
  ModelName out;
  std::string_view name = text;
  const size_t colon = text.rfind(':');
  if (colon != std::string_view::npos) {
    name = text.substr(0, colon);
    const std::string_view tag = text.substr(colon + 1);
    if (!valid_part(tag)) {
      return invalid_argument("model tag '" + std::string(tag) +
                              "' must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit");
    }
    out.tag = std::string(tag);
  }
  if (name.empty()) return invalid_argument("a model name is required (NAME or NAME:TAG)");
  int n_parts = 0;
  size_t begin = 0;
  while (true) {
    const size_t slash = name.find('/', begin);
    const std::string_view part = name.substr(begin, slash == std::string_view::npos ? name.npos : slash - begin);
    if (!valid_part(part) || ++n_parts > kMaxParts) {
      return invalid_argument("model name '" + std::string(name) +
                              "' must be 1-3 parts separated by '/', each 1-128 letters, digits, '.', '_' or '-' "
                              "starting with a letter or digit");
    }
    if (slash == std::string_view::npos) break;
    begin = slash + 1;
  }
  out.name = std::string(name);
  return out;
}

}  // namespace tokenmill::store
