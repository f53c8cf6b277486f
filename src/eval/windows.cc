#include "eval/windows.h"

#include <numeric>
#include <string>

#include "ops/kv_storage.h"

namespace tokenmill::eval {

Result<WindowPlan> plan_windows(int64_t n_tokens, int32_t n_ctx, int32_t max_windows) {
  if (n_ctx < 16 || n_ctx > (1 << 20)) {
    return invalid_argument("context length " + std::to_string(n_ctx) + " is outside [16, 1048576]");
  }
  if (n_tokens < n_ctx) {
    return invalid_argument("the text has " + std::to_string(n_tokens) + " tokens, fewer than one context of " +
                            std::to_string(n_ctx) + ": use a longer text or a smaller --ctx");
  }
  WindowPlan plan;
  plan.n_ctx = n_ctx;
  plan.first_scored = n_ctx / 2;
  const int64_t n_windows = n_tokens / n_ctx;
  plan.n_windows = static_cast<int32_t>(max_windows > 0 ? std::min<int64_t>(n_windows, max_windows) : n_windows);
  return plan;
}

std::vector<int32_t> window_tokens(std::span<const int32_t> tokens, const WindowPlan& plan, int32_t window,
                                   int32_t bos_id) {
  const size_t begin = static_cast<size_t>(window) * plan.n_ctx;
  std::vector<int32_t> out(tokens.begin() + begin, tokens.begin() + begin + plan.n_ctx);
  if (bos_id >= 0) out[0] = bos_id;
  return out;
}

Status run_windows(model::Model& model, std::span<const int32_t> tokens, const WindowPlan& plan, int32_t bos_id,
                   const WindowScorer& scorer, ops::KvType kv_type) {
  constexpr int32_t kBlockSize = 16;
  const int32_t n_blocks = (plan.n_ctx + kBlockSize - 1) / kBlockSize;
  ops::KvStorage kv(model.kv_shape(n_blocks, kBlockSize, kv_type));
  std::vector<int32_t> block_table(n_blocks);
  std::iota(block_table.begin(), block_table.end(), 0);
  std::vector<float> logits;  // [n_scored_per_window, n_vocab]
  for (int32_t w = 0; w < plan.n_windows; ++w) {
    const std::vector<int32_t> window = window_tokens(tokens, plan, w, bos_id);
    model::Batch batch;
    batch.add_sequence(window, 0, block_table, false);
    for (int32_t p = plan.first_scored; p < plan.n_ctx - 1; ++p) batch.output_tokens.push_back(p);
    TM_RETURN_IF_ERROR(model.forward(batch, kv, logits));
    TM_RETURN_IF_ERROR(scorer(w, window, logits));
  }
  return {};
}

}  // namespace tokenmill::eval
