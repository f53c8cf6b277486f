// How much KV cache an engine has: blocks of positions for every layer but the
// sliding-window ones, and window slots for those (kv/window_slots.h), from
// EngineConfig's ctx_total or kv_memory_bytes.
#pragma once

#include <cstdint>

#include "engine/engine.h"
#include "model/model.h"
#include "ops/kv_storage.h"

namespace tokenmill::engine {

struct KvSizing {
  int32_t n_blocks = 0;
  int32_t n_window_slots = 0;
  int32_t window = 0;  // positions a windowed layer sees; 0: no windowed layers
};

KvSizing size_kv(const EngineConfig& config, const model::Model& model);

// The cache's shape: with the windowed layers in n_window_slots slots when `windowed`.
ops::KvShape kv_shape(const model::Model& model, const EngineConfig& config, bool windowed, int32_t n_blocks,
                      int32_t n_window_slots);

}  // namespace tokenmill::engine
