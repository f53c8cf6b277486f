#include "quant/argmax_screen.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "base/cpu_features.h"
#include "base/half.h"
#include "base/large_buffer.h"
#include "quant/blocks.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/panel_layout.h"

namespace tokenmill::quant {

namespace {

// The token's figures are used in float: each gets this relative margin (the rows' get
// theirs where the screen is filled, quant/kernels/argmax_screen_amx.cc).
constexpr double kMargin = 1e-5;
// Above this norm the bounds could overflow in float: such a row goes the exact way.
constexpr double kLargestNorm = 1e18;

// p = round(v / scale) within [-127, 127]; scale 0 gives 0.
int8_t level(float v, float scale) {
  if (scale == 0.0f) return 0;
  const float q = std::nearbyint(v / scale);
  return static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
}

}  // namespace

bool screen_supported(gguf::TensorType type, int64_t n_cols) {
  return type == gguf::TensorType::kQ8_0 && n_cols > 0 && n_cols % kScreenStep == 0;
}

ArgmaxScreen make_argmax_screen(int64_t n_rows, int64_t n_cols) {
  ArgmaxScreen s;
  s.n_rows = n_rows;
  s.n_cols = n_cols;
  s.levels = allocate_large_buffer(static_cast<size_t>(n_rows) * static_cast<size_t>(n_cols));
  s.scale.assign(static_cast<size_t>(n_rows), 0.0f);
  s.x_factor.assign(static_cast<size_t>(n_rows), 0.0f);
  s.dx_factor.assign(static_cast<size_t>(n_rows), 0.0f);
  return s;
}

// The screen's own passes are AMX kernels; elsewhere screen_runs_here() is false and
// these are never called.
bool fill_argmax_screen(ArgmaxScreen& screen, const uint8_t* panels, int64_t first_panel, int64_t last_panel) {
#if defined(__x86_64__)
  return amx::fill_screen_panels(screen, panels, first_panel, last_panel);
#else
  return false;
#endif
}

bool screen_token(const uint8_t* q8_row, int64_t t, int64_t n_cols, int8_t* y, int8_t* z, ScreenToken& token) {
  const auto* blocks = reinterpret_cast<const BlockQ8_0*>(q8_row);
  float max_abs = 0.0f;
  for (int64_t b = 0; b < n_cols / kLegacyBlockSize; ++b) {
    const float d = f16_to_f32(blocks[b].d);
    if (!std::isfinite(d)) return false;
    for (int i = 0; i < kLegacyBlockSize; ++i) max_abs = std::max(max_abs, std::fabs(d * blocks[b].qs[i]));
  }
  // x' = S (y + z / 128): y to S, z to S / 128 of what y leaves (|x - S y| <= S / 2, so
  // |z| <= 64 + rounding).
  const float scale = max_abs / 127.0f;
  const float fine = scale / 128.0f;
  double x2 = 0.0, dx2 = 0.0;
  for (int64_t b = 0; b < n_cols / kLegacyBlockSize; ++b) {
    const float d = f16_to_f32(blocks[b].d);
    for (int i = 0; i < kLegacyBlockSize; ++i) {
      const float x = d * blocks[b].qs[i];  // exact: an 11-bit scale times a 7-bit integer
      const size_t at = screen_level_index(t, b * kLegacyBlockSize + i, n_cols);
      y[at] = level(x, scale);
      const double rest = static_cast<double>(x) - static_cast<double>(scale) * y[at];
      z[at] = level(static_cast<float>(rest), fine);
      const double dx = rest - static_cast<double>(fine) * z[at];
      x2 += static_cast<double>(x) * x;
      dx2 += dx * dx;
    }
  }
  token.scale = scale;
  if (!(std::sqrt(x2) < kLargestNorm)) return false;
  token.norm = static_cast<float>(std::sqrt(x2) * (1 + kMargin));
  token.error_norm = static_cast<float>(std::sqrt(dx2) * (1 + kMargin));
  return true;
}

bool screen_runs_here() {
  // TOKENMILL_ARGMAX_SCREEN=0 turns the screen off (the exact kernels pick; the same tokens).
  static const bool allowed = [] {
    const char* setting = std::getenv("TOKENMILL_ARGMAX_SCREEN");
    return setting == nullptr || std::string_view(setting) != "0";
  }();
  return allowed && cpu_features().has_amx_kernels();
}

void screen_panels(const ArgmaxScreen& screen, int64_t first_panel, int64_t last_panel, const int8_t* y,
                   const int8_t* z, const ScreenToken* tokens, int64_t n_tokens, ScreenCandidates* candidates) {
#if defined(__x86_64__)
  amx::screen_panels(screen, first_panel, last_panel, y, z, tokens, n_tokens, candidates);
#endif
}

}  // namespace tokenmill::quant
