// A coarse int8 copy of a weight matrix that finds, for many activation rows at once,
// which weight rows can still hold each row's largest product (the greedy pick of an
// output projection), so that only those are computed exactly.
//
// Each weight row r is requantized with one scale for the whole row, w' = D_r p (p int8),
// and each activation row x (the Q8_0 row the exact kernels read) in two int8 levels,
// x' = S_t (y + z / 128). With dw = w - w' and dx = x - x', Cauchy-Schwarz bounds the
// difference from the exact product:
//   |w.x - w'.x'| = |dw.x + w'.dx| <= ||dw||_2 ||x||_2 + ||w'||_2 ||dx||_2,
// plus a slack for the float rounding of the exact kernel and of the screen. A row whose
// upper bound is below another row's lower bound can never be the largest, not even
// tied; the others are candidates, computed exactly. The integer products p.y and p.z run
// on AMX tiles (quant/kernels/argmax_screen_amx.cc) as one int32 sum each per (row,
// token) over the whole row: no per-block float steps, which is where the exact kernels
// spend their time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "gguf/tensor_type.h"

namespace tokenmill::quant {

inline constexpr int64_t kScreenStep = 64;  // columns per tile step (one AMX tile row)

// Whether a weight matrix of this type, stored in panels (quant/panel_layout.h), with
// n_cols columns, can have a screen. (Q8_0 with n_cols a multiple of kScreenStep.)
bool screen_supported(gguf::TensorType type, int64_t n_cols);

struct ArgmaxScreen {
  int64_t n_rows = 0;
  int64_t n_cols = 0;
  // Per 16-row panel and step of kScreenStep columns, one AMX B tile (1 KB): byte
  // 4n + m of tile row i is p of panel row n at column step * 64 + 4i + m.
  std::shared_ptr<uint8_t[]> levels;
  // Per row: D_r; the factor of ||x||_2 in the bound (||dw||_2 and the slack); the factor
  // of ||dx||_2 (||w'||_2). Both with a margin for their use in float.
  std::vector<float> scale, x_factor, dx_factor;

  const uint8_t* panel_levels(int64_t panel) const {
    return levels.get() + static_cast<size_t>(panel) * static_cast<size_t>(n_cols) * 16;
  }
};

// The memory a screen of n_rows x n_cols takes: its levels and three floats a row.
inline int64_t screen_bytes(int64_t n_rows, int64_t n_cols) {
  return n_rows * n_cols + n_rows * 3 * static_cast<int64_t>(sizeof(float));
}

// An empty screen (n_rows rows, none filled yet). REQUIRES: screen_supported.
ArgmaxScreen make_argmax_screen(int64_t n_rows, int64_t n_cols);

// Fills panels [first_panel, last_panel) of `screen` from the packed Q8_0 matrix
// `panels`. Returns false if a weight is not finite (the screen then cannot bound it; the
// caller keeps the exact path). REQUIRES: screen_runs_here().
bool fill_argmax_screen(ArgmaxScreen& screen, const uint8_t* panels, int64_t first_panel, int64_t last_panel);

// One activation row as the screen reads it: its levels y and z, S_t, ||x||_2 and ||dx||_2
// (with a margin). The levels of 16 rows form a tile: per step of kScreenStep columns,
// 16 rows of 64 bytes (screen_level_index).
struct ScreenToken {
  float scale = 0;
  float norm = 0;
  float error_norm = 0;
};

// Where column k of activation row t lies in the tiled levels.
inline size_t screen_level_index(int64_t t, int64_t k, int64_t n_cols) {
  return static_cast<size_t>(((t / 16) * (n_cols / kScreenStep) + k / kScreenStep) * 1024 + (t % 16) * 64 + k % 64);
}

// Requantizes the Q8_0 activation row t (`q8_row`, n_cols values) into its levels in y
// and z (tiled, see above) and its token figures. Returns false if a value is not finite.
bool screen_token(const uint8_t* q8_row, int64_t t, int64_t n_cols, int8_t* y, int8_t* z, ScreenToken& token);

// Candidates for one activation row, from the screen: rows whose upper bound reached the
// row's running lower bound when they were seen, with that upper bound. After every panel
// has been seen, the rows with upper >= the final lower bound hold every row the exact
// values could make the largest (the first of the largest included).
struct ScreenCandidates {
  float lower = -1e30f;  // the largest lower bound seen
  std::vector<std::pair<float, int32_t>> rows;
};

// Whether this CPU runs the screen: AMX-INT8 with the OS's grant (TOKENMILL_ISA caps it), and
// TOKENMILL_ARGMAX_SCREEN is not 0.
bool screen_runs_here();

// Screens panels [first_panel, last_panel) for n_tokens activation rows (y, z: their
// tiled levels from screen_token, the rows up to the next multiple of 16 present and
// zero), adding to each row's candidates. REQUIRES: screen_runs_here().
void screen_panels(const ArgmaxScreen& screen, int64_t first_panel, int64_t last_panel, const int8_t* y,
                   const int8_t* z, const ScreenToken* tokens, int64_t n_tokens, ScreenCandidates* candidates);

}  // namespace tokenmill::quant
