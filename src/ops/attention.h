// Causal self-attention over a paged KV cache, for a flattened batch of tokens from many
// sequences. Each token attends to the cached positions of its own sequence up to and
// including its own position (optionally only the last `window` of them).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ops/kv_storage.h"

namespace tokenmill::ops {

struct AttentionBatch {
  std::span<const int32_t> positions;                // [n_tokens]
  std::span<const int32_t> sequence_of_token;        // [n_tokens] index into block_tables
  std::span<const std::vector<int32_t>> block_tables;  // per sequence: block ids by position / block_size
};

struct AttentionParams {
  int32_t layer = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  float scale = 1.0f;     // applied to q·k before the softmax
  int32_t window = 0;     // 0: attend to every earlier position; else only p - j < window
  float softcap = 0.0f;   // 0: off; else scores = softcap * tanh(scores / softcap)
  // Attention sinks (gpt-oss): per query head a learned logit that joins the softmax as
  // one more term, compared with the scaled (and capped) scores, and takes no value: it
  // lowers every key's probability. [n_heads]; null: none.
  const float* sinks = nullptr;
};

}  // namespace tokenmill::ops
