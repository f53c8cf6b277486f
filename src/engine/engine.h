// The serving engine: one thread runs the step loop. Each step the scheduler picks the
// running sequences' next tokens and chunks of waiting prompts under a token budget,
// the model runs one forward pass over all of them, and the sampler and detokenizer
// turn logits into stream events.
//
// Thread-safety: submit(), metrics() and shutdown() may be called from any thread.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/metrics.h"
#include "engine/request.h"
#include "engine/request_stream.h"
#include "engine/speculation.h"
#include "kv/disk_block_store.h"
#include "model/model.h"
#include "ops/kv_type.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::engine {

struct EngineConfig {
  int32_t block_size = 16;
  int64_t kv_memory_bytes = 0;    // memory for the KV cache; 0: enough for ctx_total
  int32_t ctx_total = 16384;      // positions the cache holds over all sequences (if kv_memory_bytes = 0)
  // Tokens per forward pass: decode tokens first, then prefill chunks. This also bounds how
  // long running streams wait while a long prompt is being read: a step of 128 prompt
  // tokens takes a few decode steps' time (docs/serving.md, chunked prefill).
  int32_t max_batch_tokens = 128;
  int32_t max_seqs = 64;          // sequences running at once
  int32_t max_context = 8192;     // prompt + generated tokens of one sequence
  // > 0: a request still waiting or generating this many seconds after it was submitted
  // ends there, as if it had reached max_tokens (FinishReason::kLength).
  double request_timeout_seconds = 0;
  bool prefix_caching = true;
  // Sliding-window layers (Gemma 3) keep only the positions their window sees, not every
  // position: the same memory holds several times more context. Off: every layer keeps
  // every position (the results are the same either way).
  bool window_kv = true;
  // How keys and values are stored: F16 (as llama.cpp's default), or Q8_0 - about half
  // the memory and bytes read per step, the attention inputs rounded to 8 bits per value.
  // REQUIRES: model.check_kv_type(kv_type).ok().
  ops::KvType kv_type = ops::KvType::kF16;
  // Empty, or one CPU per back-end thread: the engine thread (which runs part 0 of every
  // parallel call) is pinned to cpus[0] and the back end's thread k to cpus[k].
  std::vector<int> pinned_cpus;
  // Speculative decoding (engine/speculation.h, docs/speculative.md): greedy requests'
  // sequences carry n-gram drafts into the step where they pay. The output is the same.
  // REQUIRES: speculative_config_error(speculative) is "".
  SpeculativeConfig speculative;
  // While interactive requests run or wait, a step that carries batch work lasts at most
  // this many times a one-token step (from the fitted step cost), so that interactive
  // streams keep their pace. Until kInteractiveRecentSeconds after the last of them, a
  // pass of batch work alone is abandoned when an interactive request arrives (its
  // prompt then waits for a slice of a pass, not a whole one); after that, batch work
  // takes whole steps. 0: no limit and no abandoning.
  double batch_latency_factor = 2.0;
  // The prefix cache's disk tier (kv/disk_block_store.h, docs/serving.md): full blocks are
  // written under this folder and read back, after an eviction or a restart, instead of
  // being recomputed. "" for none; kv_disk_bytes bounds the files (least recently used
  // go first). REQUIRES: prefix_caching when set.
  std::string kv_disk_dir;
  int64_t kv_disk_bytes = 0;
};

// How long interactive traffic counts as present after its last request (EngineConfig).
inline constexpr double kInteractiveRecentSeconds = 10.0;

class Engine {
 public:
  Engine(model::Model& model, const tokenizer::Tokenizer& tokenizer, EngineConfig config);
  ~Engine();  // stops the step loop; unfinished requests end with FinishReason::kCancelled
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // The bytes of KV cache an engine with this config commits when it is made (all of it
  // up front: see ops::KvStorage).
  static int64_t kv_cache_bytes(const model::Model& model, const EngineConfig& config);

  // Validates and queues a request. Errors (InvalidArgument) for an empty prompt, a
  // prompt plus max_tokens beyond max_context, bad sampling values, n out of 1..8.
  Result<std::shared_ptr<RequestStream>> submit(Request request);

  const EngineMetrics& metrics() const;
  const EngineConfig& config() const;
  // Blocks the caller for every pool block currently free/total (for tests).
  struct PoolCounters {
    int32_t n_blocks = 0;
    int32_t n_free = 0;      // free, cached or not
    int32_t n_cached = 0;    // free blocks that still hold a reusable prefix
    int32_t n_window_slots = 0;  // sliding-window layers' slots (0: every layer keeps every position)
    int32_t n_window_held = 0;   // of those, held by sequences
    int32_t window = 0;          // positions a sliding-window layer sees (0: no window slots)
    int64_t kv_bytes = 0;        // memory of the whole KV cache
    int32_t n_draft_blocks = 0;  // the draft model's cache (SpecMode::kDraft; 0 without one)
    int32_t n_draft_free = 0;
  };
  PoolCounters pool_counters() const;
  // The disk tier's folder and counters; nullopt without one.
  struct KvDiskState {
    std::string folder;  // DIR/<fingerprint>, "" while the tier is still starting
    kv::DiskStoreCounters counters;
  };
  std::optional<KvDiskState> kv_disk_state() const;
  // Blocks until the disk tier is ready (its index built) and has nothing queued.
  void flush_kv_disk();

  // Stops taking requests; waits up to grace for running ones, then cancels the rest.
  void shutdown(std::chrono::milliseconds grace);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tokenmill::engine
