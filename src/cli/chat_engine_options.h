// The flags of the batching engine a chat model is served by (threads, KV cache, batch
// sizes, speculation), shared by `tokenmill serve` and `tokenmill batch`, and the load
// of one chat model with its engine.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "engine/speculation.h"
#include "ops/kv_storage.h"
#include "server/model_set.h"

namespace tokenmill::cli {

struct ChatEngineOptions {
  int n_threads = 0;
  int64_t kv_memory_mib = 0;
  int32_t ctx_total = 0;
  int32_t max_batch_tokens = 0;
  int32_t max_seqs = 0;
  int32_t max_context = 0;
  bool no_prefix_caching = false;
  bool no_window_kv = false;
  bool no_pin_threads = false;
  bool no_tune = false;  // the default kernel variants (no load-time tuning)
  ops::KvType kv_type = ops::KvType::kF16;
  double request_timeout_seconds = 0;
  double batch_latency_factor = 2.0;
  engine::SpeculativeConfig speculative;
  std::string draft_model;  // --draft-model
  // --kv-disk [DIR]: the prefix cache's disk tier. Given without DIR: kv_disk_default
  // (serve sets it under its data dir); not given: off.
  std::string kv_disk;
  bool kv_disk_given = false;
  std::string kv_disk_default;
  double kv_disk_gib = 8;
  // --chat-template-file: a Jinja chat template used in place of each model's own.
  std::string chat_template_file;
};

void add_chat_engine_options(CLI::App* cmd, ChatEngineOptions& o);

// Whether to pin: one compute thread per allowed CPU, each to its own (unless --no-pin-threads).
bool pin_threads(const ChatEngineOptions& options, int n_compute);

// Loads one chat model with the engine the flags describe: its weights, tokenizer, KV
// cache (refused up front when it cannot fit in memory) and engine thread, and the
// --chat-template-file template (refused up front when it does not parse). verbose
// prints the cache and thread lines of the start-up banner.
Result<std::unique_ptr<server::LoadedModel>> load_chat_model(const ChatEngineOptions& options, const std::string& path,
                                                             const std::string& name, bool verbose);

}  // namespace tokenmill::cli
