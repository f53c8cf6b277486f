// Scoring a long token stream the way llama.cpp's perplexity tool does: cut it into
// non-overlapping windows of n_ctx tokens, start each window with BOS (it replaces the
// window's first token), run the window as one sequence from position 0, and score only
// its second half: the logits at positions first_scored .. n_ctx-2 predict the tokens at
// first_scored+1 .. n_ctx-1, so every scored token has at least n_ctx/2 tokens of context.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/status.h"
#include "model/model.h"
#include "ops/kv_type.h"

namespace tokenmill::eval {

struct WindowPlan {
  int32_t n_ctx = 0;
  int32_t n_windows = 0;
  int32_t first_scored = 0;  // n_ctx / 2: position whose logits predict the first scored token

  int32_t n_scored_per_window() const { return n_ctx - 1 - first_scored; }
  int64_t n_scored() const { return static_cast<int64_t>(n_windows) * n_scored_per_window(); }
};

// n_windows = min(n_tokens / n_ctx, max_windows) (max_windows <= 0: no limit). Fails when
// n_ctx is not in [16, 1 << 20] or the stream is shorter than one window.
Result<WindowPlan> plan_windows(int64_t n_tokens, int32_t n_ctx, int32_t max_windows);

// The tokens window w is run with: tokens[w * n_ctx, (w + 1) * n_ctx) with the first
// replaced by bos_id (when bos_id >= 0).
std::vector<int32_t> window_tokens(std::span<const int32_t> tokens, const WindowPlan& plan, int32_t window,
                                   int32_t bos_id);

// Called once per window with its tokens [n_ctx] and the logits of its scored positions:
// logits[i * n_vocab ...] for position first_scored + i, predicting window[first_scored + i + 1].
using WindowScorer = std::function<Status(int32_t window, std::span<const int32_t> window_tokens,
                                          const std::vector<float>& logits)>;

// Runs every window of the plan through the model (fresh positions, one KV cache of
// kv_type reused) and hands each to `scorer`; stops at the first error.
// REQUIRES: model.check_kv_type(kv_type).ok().
Status run_windows(model::Model& model, std::span<const int32_t> tokens, const WindowPlan& plan, int32_t bos_id,
                   const WindowScorer& scorer, ops::KvType kv_type = ops::KvType::kF16);

}  // namespace tokenmill::eval
