#include "engine/kv_sizing.h"

#include <algorithm>

namespace tokenmill::engine {

ops::KvShape kv_shape(const model::Model& model, const EngineConfig& config, bool windowed, int32_t n_blocks,
                      int32_t n_window_slots) {
  return windowed ? model.kv_shape_windowed(n_blocks, n_window_slots, config.block_size, config.kv_type)
                  : model.kv_shape(n_blocks, config.block_size, config.kv_type);
}

KvSizing size_kv(const EngineConfig& config, const model::Model& model) {
  KvSizing sizing;
  const model::ModelConfig& c = model.config();
  const bool windowed = config.window_kv && c.sliding_window > 0 &&
                        std::find(c.layer_is_sliding.begin(), c.layer_is_sliding.end(), true) != c.layer_is_sliding.end();
  if (windowed) sizing.window = c.sliding_window;
  // Window slots every running sequence may hold at once (the blocks its window spans,
  // plus one it is filling), and a prefill chunk's worth more: beyond that, more slots
  // would never be used.
  const int32_t slots_per_sequence = (sizing.window + config.block_size - 1) / config.block_size + 1;
  const int64_t useful_slots =
      static_cast<int64_t>(config.max_seqs) * slots_per_sequence + (config.max_batch_tokens + config.block_size - 1) / config.block_size;
  if (config.kv_memory_bytes > 0) {
    const int64_t per_block_and_slot = kv_shape(model, config, windowed, 1, 1).total_bytes();
    if (!windowed) {
      sizing.n_blocks = static_cast<int32_t>(std::max<int64_t>(1, config.kv_memory_bytes / per_block_and_slot));
      return sizing;
    }
    const int64_t per_block = kv_shape(model, config, true, 1, 0).total_bytes();
    const int64_t per_slot = per_block_and_slot - per_block;
    // A slot per block while the memory is small; past useful_slots, blocks alone.
    int64_t n_blocks = config.kv_memory_bytes / per_block_and_slot;
    if (n_blocks > useful_slots) n_blocks = (config.kv_memory_bytes - useful_slots * per_slot) / per_block;
    sizing.n_blocks = static_cast<int32_t>(std::max<int64_t>(1, n_blocks));
    sizing.n_window_slots = static_cast<int32_t>(std::min<int64_t>(sizing.n_blocks, useful_slots));
    return sizing;
  }
  sizing.n_blocks = (config.ctx_total + config.block_size - 1) / config.block_size;
  if (windowed) sizing.n_window_slots = static_cast<int32_t>(std::min<int64_t>(sizing.n_blocks, useful_slots));
  return sizing;
}

}  // namespace tokenmill::engine
