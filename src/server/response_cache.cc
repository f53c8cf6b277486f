#include "server/response_cache.h"

#include <nlohmann/json.hpp>

#include "store/sha256.h"

namespace tokenmill::server {

namespace {

bool contains_token(const std::string& header, const char* token) {
  std::string lower;
  for (char c : header) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find(token) != std::string::npos;
}

// Forwards to the connection, keeping a copy of a 200 answer for the cache.
class RecordingResponder : public Responder {
 public:
  RecordingResponder(std::shared_ptr<Responder> inner, ResponseCache& cache, std::string key)
      : inner_(std::move(inner)), cache_(cache), key_(std::move(key)) {}

  void send(int status, const std::string& content_type, std::string body, const HeaderList& extra) override {
    if (status == 200 && complete(body) && inner_->connected()) cache_.put(key_, {content_type, false, body});
    inner_->send(status, content_type, std::move(body), with_miss(extra));
  }
  void begin_stream(int status, const std::string& content_type, const HeaderList& extra) override {
    recording_ = status == 200;
    content_type_ = content_type;
    inner_->begin_stream(status, content_type, with_miss(extra));
  }
  void write_chunk(std::string data) override {
    if (recording_) recorded_ += data;
    inner_->write_chunk(std::move(data));
  }
  void end_stream() override {
    if (recording_ && complete(recorded_) && inner_->connected()) {
      cache_.put(key_, {content_type_, true, std::move(recorded_)});
    }
    inner_->end_stream();
  }
  void post(std::function<void()> fn) override { inner_->post(std::move(fn)); }
  void watch_disconnect(std::function<void()> on_gone) override { inner_->watch_disconnect(std::move(on_gone)); }
  bool connected() const override { return inner_->connected(); }

 private:
  // An answer the engine cut short (cancelled, failed) is not worth replaying.
  static bool complete(const std::string& text) {
    return text.find("\"finish_reason\":\"cancelled\"") == std::string::npos &&
           text.find("\"finish_reason\":\"error\"") == std::string::npos;
  }
  static HeaderList with_miss(const HeaderList& extra) {
    HeaderList out = extra;
    out.emplace_back("x-tokenmill-cache", "miss");
    return out;
  }

  std::shared_ptr<Responder> inner_;
  ResponseCache& cache_;
  const std::string key_;
  bool recording_ = false;
  std::string content_type_;
  std::string recorded_;
};

}  // namespace

std::optional<CachedResponse> ResponseCache::get(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++misses_;
    return std::nullopt;
  }
  if (std::chrono::steady_clock::now() - it->second->stored > config_.ttl) {
    erase(it->second);
    ++misses_;
    return std::nullopt;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  ++hits_;
  return lru_.front().response;
}

void ResponseCache::put(const std::string& key, CachedResponse response) {
  const int64_t size = static_cast<int64_t>(response.bytes.size() + key.size());
  if (size > config_.max_bytes) return;
  std::lock_guard lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) erase(it->second);
  while (!lru_.empty() && bytes_ + size > config_.max_bytes) erase(std::prev(lru_.end()));
  lru_.push_front({key, std::move(response), std::chrono::steady_clock::now()});
  index_[key] = lru_.begin();
  bytes_ += size;
}

void ResponseCache::erase(std::list<Entry>::iterator it) {
  bytes_ -= static_cast<int64_t>(it->response.bytes.size() + it->key.size());
  index_.erase(it->key);
  lru_.erase(it);
}

uint64_t ResponseCache::hits() const {
  std::lock_guard lock(mu_);
  return hits_;
}
uint64_t ResponseCache::misses() const {
  std::lock_guard lock(mu_);
  return misses_;
}
int64_t ResponseCache::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}
size_t ResponseCache::entries() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

CachePolicy cache_policy(const std::string& cache_control, const Json& body) {
  CachePolicy policy;
  const auto cache = body.find("cache");
  if (cache != body.end() && cache->is_boolean() && !cache->get<bool>()) return policy;
  if (contains_token(cache_control, "no-store")) return policy;
  // Deterministic: greedy, or sampled from a fixed seed.
  const auto temperature = body.find("temperature");
  const bool greedy = temperature != body.end() && temperature->is_number() && temperature->get<double>() == 0.0;
  const auto seed = body.find("seed");
  const bool seeded = seed != body.end() && seed->is_number_integer();
  if (!greedy && !seeded) return policy;
  policy.write = true;
  policy.read = !contains_token(cache_control, "no-cache");
  return policy;
}

std::string response_cache_key(const std::string& path, const std::string& model_file, const Json& body) {
  nlohmann::json canonical = nlohmann::json::parse(body.dump());  // keys sorted
  canonical.erase("cache");
  const std::string text = path + "\n" + model_file + "\n" + canonical.dump();
  store::Sha256 digest;
  digest.update(text.data(), text.size());
  return digest.hex();
}

std::shared_ptr<Responder> recording_into_cache(std::shared_ptr<Responder> out, ResponseCache& cache, std::string key) {
  return std::make_shared<RecordingResponder>(std::move(out), cache, std::move(key));
}

void answer_from_cache(Responder& out, const CachedResponse& response) {
  const HeaderList hit = {{"x-tokenmill-cache", "hit"}};
  if (!response.streamed) {
    out.send(200, response.content_type, response.bytes, hit);
    return;
  }
  out.begin_stream(200, response.content_type, hit);
  out.write_chunk(response.bytes);
  out.end_stream();
}

}  // namespace tokenmill::server
