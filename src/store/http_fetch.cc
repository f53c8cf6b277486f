#include "store/http_fetch.h"

#include <curl/curl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "store/sha256.h"

namespace tokenmill::store {

namespace {

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// One easy handle with the settings every request shares, freed on scope exit.
class Request {
 public:
  Request(const std::string& url, const HeaderList& headers) {
    init_curl_once();
    curl_ = curl_easy_init();
    for (const std::string& h : headers) list_ = curl_slist_append(list_, h.c_str());
    curl_easy_setopt(curl_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, list_);
    curl_easy_setopt(curl_, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl_, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(curl_, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl_, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(curl_, CURLOPT_USERAGENT, "tokenmill");
    curl_easy_setopt(curl_, CURLOPT_ERRORBUFFER, error_);
  }
  ~Request() {
    curl_slist_free_all(list_);
    curl_easy_cleanup(curl_);
  }
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  CURL* get() const { return curl_; }
  long status() const {
    long code = 0;
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &code);
    return code;
  }
  std::string error(CURLcode code) const { return error_[0] != '\0' ? error_ : curl_easy_strerror(code); }

 private:
  CURL* curl_ = nullptr;
  curl_slist* list_ = nullptr;
  char error_[CURL_ERROR_SIZE] = {};
};

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// An ETag that is a SHA-256: 64 hex digits, perhaps quoted, perhaps weak (W/"...").
std::string sha256_of_etag(std::string value) {
  if (value.starts_with("W/")) value = value.substr(2);
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
  if (!is_sha256_hex(value)) return "";
  std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return std::tolower(c); });
  return value;
}

// Reads the headers of every response in a redirect chain: Hugging Face puts the LFS
// hash and size on the first (the redirect), a CDN's own ETag on the last.
struct HeadState {
  HttpHead head;
  std::string etag;            // of the last response
  int64_t content_length = -1; // of the last response
  std::string linked_etag;
  int64_t linked_size = -1;
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* state = static_cast<HeadState*>(user);
  const std::string line(data, size * n);
  const size_t colon = line.find(':');
  if (line.starts_with("HTTP/")) {  // a new response begins
    state->etag.clear();
    state->content_length = -1;
    state->head.accepts_ranges = false;
    return size * n;
  }
  if (colon == std::string::npos) return size * n;
  std::string key = line.substr(0, colon);
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::string value = trim(line.substr(colon + 1));
  if (key == "etag") state->etag = value;
  if (key == "x-linked-etag" && state->linked_etag.empty()) state->linked_etag = value;
  if (key == "content-length") state->content_length = std::strtoll(value.c_str(), nullptr, 10);
  if (key == "x-linked-size" && state->linked_size < 0) state->linked_size = std::strtoll(value.c_str(), nullptr, 10);
  if (key == "accept-ranges" && value.find("bytes") != std::string::npos) state->head.accepts_ranges = true;
  return size * n;
}

Status status_error(const std::string& url, long status) {
  if (status == 404) return not_found(url + " answered 404 Not Found");
  if (status == 401 || status == 403) {
    return io_error(url + " answered " + std::to_string(status) + " (set HF_TOKEN for a gated or private repository)");
  }
  return io_error(url + " answered HTTP " + std::to_string(status));
}

}  // namespace

Result<HttpHead> http_head(const std::string& url, const HeaderList& headers) {
  Request request(url, headers);
  HeadState state;
  curl_easy_setopt(request.get(), CURLOPT_NOBODY, 1L);
  curl_easy_setopt(request.get(), CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(request.get(), CURLOPT_HEADERDATA, &state);
  if (CURLcode code = curl_easy_perform(request.get()); code != CURLE_OK) {
    return io_error("cannot reach " + url + ": " + request.error(code));
  }
  state.head.status = request.status();
  if (state.head.status >= 400) return status_error(url, state.head.status);
  state.head.size = state.linked_size >= 0 ? state.linked_size : state.content_length;
  state.head.sha256 = sha256_of_etag(state.linked_etag);
  if (state.head.sha256.empty()) state.head.sha256 = sha256_of_etag(state.etag);
  return state.head;
}

Result<std::string> http_get_text(const std::string& url, const HeaderList& headers, size_t max_bytes) {
  Request request(url, headers);
  struct Body {
    std::string text;
    size_t max;
  } body{{}, max_bytes};
  auto on_data = +[](char* data, size_t size, size_t n, void* user) -> size_t {
    auto* b = static_cast<Body*>(user);
    if (b->text.size() + size * n > b->max) return 0;  // too long: curl stops with a write error
    b->text.append(data, size * n);
    return size * n;
  };
  curl_easy_setopt(request.get(), CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(request.get(), CURLOPT_WRITEDATA, &body);
  if (CURLcode code = curl_easy_perform(request.get()); code != CURLE_OK) {
    if (code == CURLE_WRITE_ERROR) return io_error(url + " answered more than " + std::to_string(max_bytes) + " bytes");
    return io_error("cannot reach " + url + ": " + request.error(code));
  }
  if (request.status() >= 400) return status_error(url, request.status());
  return body.text;
}

Status http_download(const std::string& url, const HeaderList& headers, const std::string& path, int64_t total,
                     const ProgressFn& progress) {
  struct stat st {};
  int64_t have = ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
  if (total >= 0 && have > total) have = 0;  // not a prefix of this file: start over
  if (total >= 0 && have == total) return {};
  std::FILE* file = std::fopen(path.c_str(), have > 0 ? "r+b" : "wb");
  if (file == nullptr) return io_error("cannot write '" + path + "': " + std::strerror(errno));
  if (have > 0 && std::fseek(file, static_cast<long>(have), SEEK_SET) != 0) have = 0;

  struct Sink {
    std::FILE* file;
    int64_t offset;      // where the next byte goes
    int64_t total;
    bool started = false;  // the status line was checked
    bool restart = false;  // the server ignored Range: write from 0
    int write_errno = 0;
    Request* request;
    const ProgressFn* progress;
    bool cancelled = false;
  } sink{file, have, total, false, false, 0, nullptr, &progress};

  Request request(url, headers);
  sink.request = &request;
  std::string range;
  if (have > 0) {
    range = std::to_string(have) + "-";
    curl_easy_setopt(request.get(), CURLOPT_RANGE, range.c_str());
  }
  auto on_data = +[](char* data, size_t size, size_t n, void* user) -> size_t {
    auto* s = static_cast<Sink*>(user);
    if (!s->started) {
      s->started = true;
      const long status = s->request->status();
      if (status >= 400) return 0;  // checked after perform
      if (status == 200 && s->offset > 0) {  // a full answer to a Range request
        s->restart = true;
        s->offset = 0;
        if (std::fseek(s->file, 0, SEEK_SET) != 0 || ftruncate(fileno(s->file), 0) != 0) {
          s->write_errno = errno;
          return 0;
        }
      }
    }
    const size_t bytes = size * n;
    if (std::fwrite(data, 1, bytes, s->file) != bytes) {
      s->write_errno = errno != 0 ? errno : EIO;
      return 0;
    }
    s->offset += static_cast<int64_t>(bytes);
    if (*s->progress && !(*s->progress)(s->offset, s->total)) {
      s->cancelled = true;
      return 0;
    }
    return bytes;
  };
  curl_easy_setopt(request.get(), CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(request.get(), CURLOPT_WRITEDATA, &sink);
  const CURLcode code = curl_easy_perform(request.get());
  const long status = request.status();
  const bool flushed = std::fflush(file) == 0 && ::fsync(fileno(file)) == 0;
  const int flush_errno = errno;
  std::fclose(file);
  if (sink.cancelled) return internal_error("cancelled");
  if (sink.write_errno != 0) {
    return io_error("writing '" + path + "' failed: " + std::strerror(sink.write_errno));
  }
  if (status >= 400) return status_error(url, status);
  if (status == 416 && total >= 0) return io_error(url + " refused the range " + range + " (416)");
  if (code != CURLE_OK) {
    return io_error("the download from " + url + " stopped after " + std::to_string(sink.offset) + " bytes (" +
                    request.error(code) + "); run the same pull again to resume");
  }
  if (!flushed) return io_error("writing '" + path + "' failed: " + std::strerror(flush_errno));
  if (total >= 0 && sink.offset != total) {
    return io_error("the download from " + url + " ended after " + std::to_string(sink.offset) + " of " +
                    std::to_string(total) + " bytes; run the same pull again to resume");
  }
  return {};
}

}  // namespace tokenmill::store
