// Counters, gauges and latency histograms the engine keeps; the server renders them in
// Prometheus' text format. Histograms use fixed bucket bounds (seconds).
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kv/disk_block_store.h"

namespace tokenmill::engine {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);

  struct Snapshot {
    std::vector<double> upper_bounds;
    std::vector<uint64_t> cumulative_counts;  // [upper_bounds.size()], then +Inf = count
    uint64_t count = 0;
    double sum = 0;
  };
  Snapshot snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::vector<double> upper_bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; last is +Inf
  double sum_ = 0;
};

struct EngineMetrics {
  EngineMetrics();

  Histogram time_to_first_token;  // seconds from submit to the first token of a request
  Histogram inter_token_latency;  // seconds between tokens of one choice
  Histogram e2e_request_latency;  // seconds from submit to the last token

  struct Snapshot {
    int64_t requests_running = 0;
    int64_t requests_waiting = 0;
    double kv_cache_usage_ratio = 0;
    // The pool after the last step: every block and window slot is back (free, cached
    // or not) once no request runs; the soak and hostile-client tests check that.
    int64_t kv_blocks_total = 0;
    int64_t kv_blocks_free = 0;
    int64_t kv_window_slots_total = 0;
    int64_t kv_window_slots_held = 0;
    uint64_t prompt_tokens_total = 0;
    uint64_t generation_tokens_total = 0;
    uint64_t prefix_cache_queries_total = 0;  // prompt tokens looked up in the cache
    uint64_t prefix_cache_hits_total = 0;     // of those, found
    uint64_t preemptions_total = 0;
    uint64_t batch_steps_abandoned_total = 0;  // batch-only passes stopped for an interactive arrival
    // Speculative decoding (vLLM's spec_decode counters): verifications, drafts proposed
    // in them, drafts accepted, and accepted drafts by position (0: the first draft).
    uint64_t spec_drafts_total = 0;
    uint64_t spec_draft_tokens_total = 0;
    uint64_t spec_accepted_tokens_total = 0;
    std::vector<uint64_t> spec_accepted_per_position;  // grows with the longest run
    std::map<std::string, uint64_t> requests_total_by_finish_reason;
    // The prefix cache's disk tier, read live from it (kv_disk: the engine has one).
    bool kv_disk = false;
    kv::DiskStoreCounters kv_disk_counters;
    Histogram::Snapshot time_to_first_token, inter_token_latency, e2e_request_latency;
  };
  Snapshot snapshot() const;

  // Updated by the engine thread.
  struct PoolGauges {
    int64_t blocks_total = 0, blocks_free = 0, window_slots_total = 0, window_slots_held = 0;
  };
  void set_gauges(int64_t running, int64_t waiting, double kv_usage, const PoolGauges& pool);
  void add_prompt_tokens(uint64_t n);
  void add_generation_tokens(uint64_t n);
  void add_prefix_cache(uint64_t queried, uint64_t hit);
  void add_preemption();
  void add_abandoned_batch_step();
  // One sequence's drafts verified: `accepted` of `proposed` (the first ones) kept.
  void add_speculation(int32_t proposed, int32_t accepted);
  void add_finished_request(const std::string& finish_reason);
  // The disk tier whose counters snapshot() reads (nullptr: none). It must outlive its use.
  void set_disk_store(const kv::DiskBlockStore* store);

 private:
  mutable std::mutex mutex_;
  Snapshot counters_;  // guarded by mutex_; histogram fields unused here
  const kv::DiskBlockStore* disk_store_ = nullptr;  // guarded by mutex_
};

}  // namespace tokenmill::engine
