#include "engine/metrics.h"

#include <algorithm>

namespace tokenmill::engine {

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)), counts_(upper_bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  const size_t bucket = std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) - upper_bounds_.begin();
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_[bucket];
  sum_ += value;
}

Histogram::Snapshot Histogram::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Snapshot s;
  s.upper_bounds = upper_bounds_;
  uint64_t running = 0;
  for (size_t i = 0; i < upper_bounds_.size(); ++i) {
    running += counts_[i];
    s.cumulative_counts.push_back(running);
  }
  s.count = running + counts_.back();
  s.sum = sum_;
  return s;
}

namespace {

std::vector<double> latency_buckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
}

}  // namespace

EngineMetrics::EngineMetrics()
    : time_to_first_token(latency_buckets()), inter_token_latency(latency_buckets()), e2e_request_latency(latency_buckets()) {}

EngineMetrics::Snapshot EngineMetrics::snapshot() const {
  Snapshot s;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    s = counters_;
    if (disk_store_ != nullptr) {
      s.kv_disk = true;
      s.kv_disk_counters = disk_store_->counters();
    }
  }
  s.time_to_first_token = time_to_first_token.snapshot();
  s.inter_token_latency = inter_token_latency.snapshot();
  s.e2e_request_latency = e2e_request_latency.snapshot();
  return s;
}

void EngineMetrics::set_gauges(int64_t running, int64_t waiting, double kv_usage, const PoolGauges& pool) {
  std::lock_guard<std::mutex> lock(mutex_);
  counters_.requests_running = running;
  counters_.requests_waiting = waiting;
  counters_.kv_cache_usage_ratio = kv_usage;
  counters_.kv_blocks_total = pool.blocks_total;
  counters_.kv_blocks_free = pool.blocks_free;
  counters_.kv_window_slots_total = pool.window_slots_total;
  counters_.kv_window_slots_held = pool.window_slots_held;
}

void EngineMetrics::add_prompt_tokens(uint64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  counters_.prompt_tokens_total += n;
}

void EngineMetrics::add_generation_tokens(uint64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  counters_.generation_tokens_total += n;
}

void EngineMetrics::add_prefix_cache(uint64_t queried, uint64_t hit) {
  std::lock_guard<std::mutex> lock(mutex_);
  counters_.prefix_cache_queries_total += queried;
  counters_.prefix_cache_hits_total += hit;
}

void EngineMetrics::add_preemption() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++counters_.preemptions_total;
}

void EngineMetrics::add_abandoned_batch_step() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++counters_.batch_steps_abandoned_total;
}

void EngineMetrics::add_speculation(int32_t proposed, int32_t accepted) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++counters_.spec_drafts_total;
  counters_.spec_draft_tokens_total += static_cast<uint64_t>(proposed);
  counters_.spec_accepted_tokens_total += static_cast<uint64_t>(accepted);
  std::vector<uint64_t>& per_position = counters_.spec_accepted_per_position;
  if (per_position.size() < static_cast<size_t>(proposed)) per_position.resize(static_cast<size_t>(proposed), 0);
  for (int32_t i = 0; i < accepted; ++i) ++per_position[static_cast<size_t>(i)];
}

void EngineMetrics::add_finished_request(const std::string& finish_reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++counters_.requests_total_by_finish_reason[finish_reason];
}


void EngineMetrics::set_disk_store(const kv::DiskBlockStore* store) {
  std::lock_guard<std::mutex> lock(mutex_);
  disk_store_ = store;
}

}  // namespace tokenmill::engine
