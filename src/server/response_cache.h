// An exact-match cache of whole responses in front of the model: a deterministic request
// (temperature 0, or a fixed seed) that arrives again with the same body, for the same
// model file, is answered from memory with the same bytes, streamed or not, without
// touching the engine. Least recently used entries go first when the bytes exceed the
// bound; entries older than the TTL are never served.
//
// Not cached: sampled requests (temperature above 0 without a seed), requests that opt
// out (Cache-Control: no-store or no-cache, or "cache": false in the body), answers
// other than 200, and answers cut short (the client left, or the request was cancelled).
//
// Thread-safety: every method may run on any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "server/http_types.h"
#include "server/json_fields.h"

namespace tokenmill::server {

struct CachedResponse {
  std::string content_type;
  bool streamed = false;
  std::string bytes;  // the whole body, or every chunk of the stream concatenated
};

struct ResponseCacheConfig {
  int64_t max_bytes = 64 << 20;
  std::chrono::milliseconds ttl = std::chrono::hours(1);
};

class ResponseCache {
 public:
  explicit ResponseCache(ResponseCacheConfig config) : config_(config) {}

  // Counts a hit or a miss; an expired entry is dropped and counts as a miss.
  std::optional<CachedResponse> get(const std::string& key);
  // Stores the response (replacing one under key), evicting the least recently used
  // until the bytes fit; a response larger than the whole bound is not stored.
  void put(const std::string& key, CachedResponse response);

  uint64_t hits() const;
  uint64_t misses() const;
  int64_t bytes() const;
  size_t entries() const;

 private:
  struct Entry {
    std::string key;
    CachedResponse response;
    std::chrono::steady_clock::time_point stored;
  };
  void erase(std::list<Entry>::iterator it);  // holds mu_

  const ResponseCacheConfig config_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  int64_t bytes_ = 0;
  uint64_t hits_ = 0, misses_ = 0;
};

// What decides whether and how a request is cached, read from its headers and body.
struct CachePolicy {
  bool read = false;   // may be answered from the cache
  bool write = false;  // its answer may be stored
};
CachePolicy cache_policy(const std::string& cache_control, const Json& body);

// The cache key of a request body for one model file: a digest of the route, the file,
// and the body with its keys in a canonical order (the "cache" field left out).
std::string response_cache_key(const std::string& path, const std::string& model_file, const Json& body);

// out, recording what it answers: a complete 200 answer goes into cache under key.
// Adds the header x-tokenmill-cache: miss.
std::shared_ptr<Responder> recording_into_cache(std::shared_ptr<Responder> out, ResponseCache& cache, std::string key);

// Answers out with a cached response (and x-tokenmill-cache: hit).
void answer_from_cache(Responder& out, const CachedResponse& response);

}  // namespace tokenmill::server
