// CpuBackend::argmax_by_screen: the greedy picks of many tokens through a matrix's int8
// screen (quant/argmax_screen.h), then the exact values of the few rows it leaves.

#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>
#include <vector>

#include "ops/cpu/cpu_backend.h"
#include "quant/kernels/dispatch.h"
#include "quant/panel_layout.h"
#include "quant/quant.h"

namespace tokenmill::ops {

const quant::ArgmaxScreen* CpuBackend::screen_of(const WeightMatrix& w) {
  auto [it, inserted] = screens_.try_emplace(ScreenKey{w.data, w.n_rows, w.n_cols});
  if (!inserted) return it->second.get();
  // Built once per matrix, its panels split between the threads.
  auto screen = std::make_unique<quant::ArgmaxScreen>(quant::make_argmax_screen(w.n_rows, w.n_cols));
  std::atomic<bool> finite{true};
  pool_->parallel_ranges(static_cast<size_t>(w.n_rows / quant::kPanelRows), 64, [&](size_t first, size_t last) {
    if (!quant::fill_argmax_screen(*screen, w.data, static_cast<int64_t>(first), static_cast<int64_t>(last))) {
      finite = false;
    }
  });
  if (finite) it->second = std::move(screen);  // else null: no bound holds, the exact pass decides
  return it->second.get();
}

bool CpuBackend::argmax_by_screen(const WeightMatrix& w, const float* x, int64_t n_tokens, int32_t* argmax) {
  const quant::ArgmaxScreen* screen = screen_of(w);
  if (screen == nullptr) return false;

  // The exact kernels' input (Q8_0 rows), and each row's levels for the screen.
  const int64_t k = w.n_cols;
  const size_t input_row_bytes = quant::row_size(gguf::TensorType::kQ8_0, k);
  quantized_input_.resize(static_cast<size_t>(n_tokens) * input_row_bytes);
  uint8_t* input = quantized_input_.data();
  const int64_t padded = (n_tokens + 15) / 16 * 16;  // whole tiles: the rows past n_tokens stay zero
  screen_levels_.assign(static_cast<size_t>(2 * padded * k), 0);
  int8_t* screen_y = screen_levels_.data();
  int8_t* screen_z = screen_y + padded * k;
  screen_tokens_.resize(static_cast<size_t>(n_tokens));
  std::atomic<bool> finite{true};
  const quant::QuantizeRowFn quantize_input = quant::best_quantize_activation(gguf::TensorType::kQ8_0);
  pool_->parallel_for(n_tokens, [&](int, size_t begin, size_t end) {
    for (size_t t = begin; t < end; ++t) {
      quantize_input(x + t * k, input + t * input_row_bytes, k);
      if (!quant::screen_token(input + t * input_row_bytes, static_cast<int64_t>(t), k, screen_y, screen_z,
                               screen_tokens_[t])) {
        finite = false;
      }
    }
  });
  if (!finite) return false;  // no bound holds for such an input: the exact pass decides

  // The screen: one region of panels per thread, each with its own candidates per token.
  const size_t n_panels = static_cast<size_t>(w.n_rows / quant::kPanelRows);
  const size_t n_threads = static_cast<size_t>(pool_->n_threads());
  const size_t panels_per_thread = ((n_panels + n_threads - 1) / n_threads + 1) / 2 * 2;  // whole pairs
  std::mutex pieces_mutex;
  std::vector<std::vector<quant::ScreenCandidates>> pieces;
  pool_->parallel_ranges(n_panels, panels_per_thread, [&](size_t first, size_t last) {
    std::vector<quant::ScreenCandidates> candidates(static_cast<size_t>(n_tokens));
    quant::screen_panels(*screen, static_cast<int64_t>(first), static_cast<int64_t>(last), screen_y, screen_z,
                         screen_tokens_.data(), n_tokens, candidates.data());
    std::lock_guard<std::mutex> lock(pieces_mutex);
    pieces.push_back(std::move(candidates));
  });

  // The exact values of every row that can still be the largest, a panel at a time through
  // the exact kernel (the bits a full pass gives them); the first of the largest wins.
  const quant::VecDotPanelsFn exact = quant::best_panel_kernel(w.type);
  std::atomic<bool> complete{true};
  pool_->parallel_for(n_tokens, [&](int, size_t begin, size_t end) {
    std::vector<int32_t> rows;
    float values[quant::kPanelRows];
    for (size_t t = begin; t < end; ++t) {
      float lower = -std::numeric_limits<float>::infinity();
      for (const auto& piece : pieces) lower = std::max(lower, piece[t].lower);
      rows.clear();
      for (const auto& piece : pieces) {
        for (const auto& [upper, row] : piece[t].rows) {
          if (upper >= lower) rows.push_back(row);
        }
      }
      std::sort(rows.begin(), rows.end());
      float best = -std::numeric_limits<float>::infinity();
      int32_t best_row = -1;
      int64_t computed_panel = -1;
      for (const int32_t row : rows) {
        const int64_t panel = row / quant::kPanelRows;
        if (panel != computed_panel) {
          exact(k, w.data + static_cast<size_t>(panel * quant::kPanelRows) * w.row_bytes, quant::kPanelRows,
                input + t * input_row_bytes, input_row_bytes, 1, values, quant::kPanelRows, nullptr);
          computed_panel = panel;
        }
        const float v = values[row % quant::kPanelRows];
        if (best_row < 0 || v > best) {
          best = v;
          best_row = row;
        }
      }
      // The row with the largest lower bound is always a candidate; should none be left,
      // the exact pass decides.
      if (best_row < 0) complete = false;
      argmax[t] = best_row;
    }
  });
  if (!complete) return false;
  screened_tokens_ += n_tokens;
  return true;
}

}  // namespace tokenmill::ops
