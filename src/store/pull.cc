#include "store/pull.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "store/sha256.h"

namespace tokenmill::store {

namespace fs = std::filesystem;

namespace {

std::string hf_endpoint() {
  const char* endpoint = std::getenv("HF_ENDPOINT");
  std::string out = endpoint != nullptr && *endpoint != '\0' ? endpoint : "https://huggingface.co";
  while (out.ends_with("/")) out.pop_back();
  return out;
}

HeaderList hf_headers() {
  HeaderList headers;
  if (const char* token = std::getenv("HF_TOKEN"); token != nullptr && *token != '\0') {
    headers.push_back(std::string("Authorization: Bearer ") + token);
  }
  return headers;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// A store name made of any text: lowercase, and what a name may not hold becomes '-'.
std::string sanitized_part(const std::string& text) {
  std::string out;
  for (unsigned char c : lower(text)) out += std::isalnum(c) || c == '.' || c == '_' || c == '-' ? char(c) : '-';
  while (!out.empty() && !std::isalnum(static_cast<unsigned char>(out.front()))) out.erase(out.begin());
  if (out.size() > 128) out.resize(128);
  return out.empty() ? "model" : out;
}

std::string stem_of(const std::string& file) {
  std::string name = fs::path(file).filename().string();
  if (lower(name).ends_with(".gguf")) name.resize(name.size() - 5);
  return name;
}

// "gemma-3-270m-it-GGUF" -> "gemma-3-270m-it".
std::string repo_model_name(const std::string& repo) {
  std::string name = repo;
  if (lower(name).ends_with("-gguf")) name.resize(name.size() - 5);
  return sanitized_part(name);
}

bool valid_repo(const std::string& repo) {
  const size_t slash = repo.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == repo.size()) return false;
  if (repo.find('/', slash + 1) != std::string::npos) return false;
  for (char c : repo) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '/' && c != '.' && c != '_' && c != '-') return false;
  }
  return repo.find("..") == std::string::npos;
}

// The repository's .gguf files whose name holds quant as a whole token (Q4_K_M matches
// "...-Q4_K_M.gguf", not "...-Q4_K_M_L.gguf").
Result<std::string> file_for_quant(const std::string& repo, const std::string& quant) {
  const std::string url = hf_endpoint() + "/api/models/" + repo + "/tree/main?recursive=true";
  auto text = http_get_text(url, hf_headers(), 16 << 20);
  if (!text.ok()) return text.status();
  const nlohmann::json listing = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!listing.is_array()) return io_error(url + " did not answer a JSON list of files");
  std::vector<std::string> matches;
  const std::string want = lower(quant);
  for (const auto& item : listing) {
    if (!item.is_object() || !item.contains("path") || !item["path"].is_string()) continue;
    const std::string path = item["path"].get<std::string>();
    const std::string stem = lower(stem_of(path));
    if (!lower(path).ends_with(".gguf")) continue;
    const size_t at = stem.rfind(want);
    if (at == std::string::npos) continue;
    const bool starts = at == 0 || !std::isalnum(static_cast<unsigned char>(stem[at - 1]));
    const size_t end = at + want.size();
    const bool ends = end == stem.size() || (!std::isalnum(static_cast<unsigned char>(stem[end])) && stem[end] != '_');
    if (starts && ends) matches.push_back(path);
  }
  if (matches.size() == 1) return matches[0];
  if (matches.empty()) return not_found("hf:" + repo + " has no .gguf file of quantization " + quant);
  std::string names;
  for (const std::string& m : matches) names += (names.empty() ? "" : ", ") + m;
  return not_found("hf:" + repo + " has several .gguf files of quantization " + quant + " (" + names +
                   "); name one: hf:" + repo + "/FILE.gguf");
}

// Holds an exclusive flock until destroyed.
class FileLock {
 public:
  explicit FileLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

}  // namespace

Result<PullSource> resolve_pull_source(const std::string& source) {
  PullSource out;
  if (source.starts_with("https://") || source.starts_with("http://")) {
    out.url = source;
    const std::string path = source.substr(0, source.find_first_of("?#"));
    out.default_name = ModelName{sanitized_part(stem_of(path)), "latest"};
    if (source.starts_with(hf_endpoint() + "/")) out.headers = hf_headers();
    return out;
  }
  if (source.starts_with("hf:")) {
    const std::string rest = source.substr(3);
    out.headers = hf_headers();
    const size_t colon = rest.find(':');
    if (colon != std::string::npos) {  // hf:ORG/REPO:QUANT
      const std::string repo = rest.substr(0, colon);
      const std::string quant = rest.substr(colon + 1);
      if (!valid_repo(repo) || quant.empty()) {
        return invalid_argument("'" + source + "' is not hf:ORG/REPO:QUANT");
      }
      auto file = file_for_quant(repo, quant);
      if (!file.ok()) return file.status();
      out.url = hf_endpoint() + "/" + repo + "/resolve/main/" + *file;
      out.default_name = ModelName{repo_model_name(repo.substr(repo.find('/') + 1)), sanitized_part(quant)};
      return out;
    }
    // hf:ORG/REPO/FILE.gguf (FILE may sit in folders)
    const size_t first = rest.find('/');
    const size_t second = first == std::string::npos ? std::string::npos : rest.find('/', first + 1);
    if (second == std::string::npos || !valid_repo(rest.substr(0, second)) ||
        !lower(rest).ends_with(".gguf") || rest.find("..") != std::string::npos) {
      return invalid_argument("'" + source + "' is not hf:ORG/REPO/FILE.gguf or hf:ORG/REPO:QUANT");
    }
    out.url = hf_endpoint() + "/" + rest.substr(0, second) + "/resolve/main/" + rest.substr(second + 1);
    out.default_name = ModelName{sanitized_part(stem_of(rest)), "latest"};
    return out;
  }
  return invalid_argument("cannot pull '" + source +
                          "': give an https:// or http:// URL of a .gguf file, hf:ORG/REPO/FILE.gguf or "
                          "hf:ORG/REPO:QUANT");
}

Result<StoreEntry> pull_model(ModelStore& store, const PullSource& source, const ModelName& name,
                              const PullOptions& options) {
  auto report = [&](PullProgress p) {
    if (options.on_progress) options.on_progress(p);
  };
  if (!options.expected_sha256.empty() && !is_sha256_hex(options.expected_sha256)) {
    return invalid_argument("--sha256 must be 64 hex digits");
  }
  if (Status s = store.create_directories(); !s.ok()) return s;
  report({"pulling manifest", "", -1, 0});
  auto head = http_head(source.url, source.headers);
  if (!head.ok()) return head.status();
  std::string expected = lower(options.expected_sha256);
  if (expected.empty()) expected = head->sha256;

  Sha256 url_digest;
  url_digest.update(source.url.data(), source.url.size());
  const std::string key = url_digest.hex().substr(0, 32);
  const std::string partial = (fs::path(store.partial_dir()) / (key + ".partial")).string();
  FileLock lock((fs::path(store.partial_dir()) / (key + ".lock")).string());
  if (!lock.ok()) return io_error("cannot lock in " + store.partial_dir());

  // Another pull may have finished this file while this one waited for the lock.
  for (const StoreEntry& entry : store.list()) {
    const bool same_bytes = !expected.empty() ? entry.digest == expected
                                              : entry.source == source.url && entry.size == head->size;
    if (same_bytes && entry.problem.empty() && !entry.linked) {
      report({"downloading sha256:" + entry.digest, "sha256:" + entry.digest, entry.size, entry.size});
      report({"verifying sha256 digest", "", -1, 0});
      report({"writing manifest", "", -1, 0});
      StoreEntry named = entry;
      auto copied = store.copy(entry.name, name);
      if (!copied.ok()) return copied.status();
      report({"success", "", -1, 0});
      return copied;
    }
  }

  const std::string shown = expected.empty() ? key : expected;
  PullProgress downloading{"downloading sha256:" + shown, expected.empty() ? "" : "sha256:" + expected, head->size, 0};
  report(downloading);
  const ProgressFn on_bytes = [&](int64_t done, int64_t total) {
    if (options.cancel != nullptr && options.cancel->load()) return false;
    downloading.completed = done;
    downloading.total = total;
    report(downloading);
    return true;
  };
  if (Status s = http_download(source.url, source.headers, partial, head->size, on_bytes); !s.ok()) return s;

  report({"verifying sha256 digest", "", -1, 0});
  auto actual = sha256_file(partial);
  if (!actual.ok()) return actual.status();
  if (!expected.empty() && *actual != expected) {
    ::unlink(partial.c_str());  // wrong bytes are not worth resuming
    return corrupt_data("the download from " + source.url + " has sha256 " + *actual + ", expected " + expected +
                        "; nothing was installed");
  }
  report({"writing manifest", "", -1, 0});
  auto entry = store.install(partial, *actual, name, source.url);
  if (!entry.ok()) {
    ::unlink(partial.c_str());
    return entry.status();
  }
  report({"success", "", -1, 0});
  return entry;
}

}  // namespace tokenmill::store
