#include "convert/json_file.h"

#include <fstream>
#include <sstream>

namespace tokenmill::convert {

Result<nlohmann::json> read_json_object(const std::filesystem::path& path, bool required) {
  std::ifstream in(path);
  if (!in) {
    if (required) return not_found(path.string() + ": cannot be read");
    return nlohmann::json();
  }
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument(path.string() + ": not a JSON object");
  return j;
}

}  // namespace tokenmill::convert
