// The screen of quant/argmax_screen.h on AMX tiles, and its build from packed Q8_0 panels
// with AVX-512.
//
// Screening: per pair of 16-row panels and tile of 16 activation rows, n_cols / 64 steps
// of four tdpbssd accumulate p.y and p.z of both panels over the whole row into four
// int32 tiles (four independent chains: a tdpbssd waits on its accumulator's previous
// one, so fewer chains leave the tile unit idle), stored once; the bounds then take a
// few vector instructions per 16 x 16 results.

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "quant/argmax_screen.h"
#include "quant/kernels/amx_tiles.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/panel_layout.h"

namespace tokenmill::quant::amx {

namespace {

// Tiles 0, 1: the levels of panels p and p + 1 (16 rows of 64 bytes: four levels of each
// of the 16 weight rows); 6, 7: 16 activation rows x 64 levels, y and z; 2, 3: the 16 x
// 16 int32 sums p.y and p.z of panel p; 4, 5: those of panel p + 1.
alignas(64) constexpr TileConfig kScreenTileConfig = full_tiles_config(8);

// Panels whose levels stay in L2 while every tile of activation rows (in L1) passes over
// them: 16 x 16 rows x n_cols levels, 160 KB at 640 columns. The weights stream from
// memory in the first pass, without software prefetches: those (of the next block, spread
// over the passes, or a few panels ahead in the first one) held the fill buffers that the
// tile loads wait on, and measured slower.
constexpr int64_t kBlockPanels = 16;

// The bounds of one panel's 16 x 16 results (sums p.y in coarse, p.z in fine) folded into
// its tokens' candidates. A token's lower bound is raised only where some upper bound of
// the panel reaches it: where none does, no lower bound of the panel (each below its
// upper bound) could raise it either.
void add_candidates(const int32_t* coarse, const int32_t* fine, const ArgmaxScreen& s, size_t row0,
                    const ScreenToken* tokens, ScreenCandidates* candidates, int64_t n_here) {
  const __m512 scale = _mm512_loadu_ps(s.scale.data() + row0);
  const __m512 x_factor = _mm512_loadu_ps(s.x_factor.data() + row0);
  const __m512 dx_factor = _mm512_loadu_ps(s.dx_factor.data() + row0);
  const __m512 fine_step = _mm512_set1_ps(1.0f / 128);
  for (int64_t t = 0; t < n_here; ++t) {
    const ScreenToken& token = tokens[t];
    ScreenCandidates& c = candidates[t];
    // D S (p.y + p.z / 128); the rounding of these float steps is in the slack.
    const __m512 levels = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(fine + t * 16)), fine_step,
                                          _mm512_cvtepi32_ps(_mm512_load_si512(coarse + t * 16)));
    const __m512 approx = _mm512_mul_ps(levels, _mm512_mul_ps(scale, _mm512_set1_ps(token.scale)));
    const __m512 bound = _mm512_fmadd_ps(x_factor, _mm512_set1_ps(token.norm),
                                         _mm512_mul_ps(dx_factor, _mm512_set1_ps(token.error_norm)));
    const __m512 upper = _mm512_add_ps(approx, bound);
    __mmask16 keep = _mm512_cmp_ps_mask(upper, _mm512_set1_ps(c.lower), _CMP_GE_OQ);
    if (keep == 0) continue;
    const float lower = _mm512_reduce_max_ps(_mm512_sub_ps(approx, bound));
    if (lower > c.lower) {
      c.lower = lower;
      keep = _mm512_cmp_ps_mask(upper, _mm512_set1_ps(c.lower), _CMP_GE_OQ);
    }
    alignas(64) float uppers[16];
    _mm512_store_ps(uppers, upper);
    for (; keep != 0; keep &= keep - 1) {
      const int lane = __builtin_ctz(keep);
      c.rows.emplace_back(uppers[lane], static_cast<int32_t>(row0 + lane));
    }
  }
}

// Panel p (levels) and, with kPair, panel p + 1 (the next panel_bytes) against one tile of
// activation rows: their sums stored to sums[0..1] and sums[2..3].
template <bool kPair>
__attribute__((always_inline)) inline void screen_tile(const uint8_t* levels, int64_t panel_bytes, const int8_t* y,
                                                       const int8_t* z, int64_t n_steps,
                                                       int32_t (*sums)[kTileTokens * 16]) {
  _tile_zero(2);
  _tile_zero(3);
  if constexpr (kPair) {
    _tile_zero(4);
    _tile_zero(5);
  }
  for (int64_t j = 0; j < n_steps; ++j) {
    const int64_t at = j * 1024;
    _tile_loadd(0, levels + at, 64);
    if constexpr (kPair) _tile_loadd(1, levels + panel_bytes + at, 64);
    _tile_loadd(6, y + at, 64);
    _tile_dpbssd(2, 6, 0);
    if constexpr (kPair) _tile_dpbssd(4, 6, 1);
    _tile_loadd(7, z + at, 64);
    _tile_dpbssd(3, 7, 0);
    if constexpr (kPair) _tile_dpbssd(5, 7, 1);
  }
  _tile_stored(2, sums[0], 64);
  _tile_stored(3, sums[1], 64);
  if constexpr (kPair) {
    _tile_stored(4, sums[2], 64);
    _tile_stored(5, sums[3], 64);
  }
}

// Bounds are used in float: each gets this relative margin, and the slack covers the
// rounding of the exact kernel's float steps (one fma per 32-column block, each off by at
// most 2^-24 of sum |w_k x_k| <= ||w||_2 ||x||_2: with 2^-22 per block the slack holds for
// any row length) and of the screen's own few float steps.
constexpr double kMargin = 1e-5;
double slack(int64_t n_cols) { return 1e-5 + static_cast<double>(n_cols / 32) * 0x1p-22; }

__m512d square_add(__m256 v, __m512d acc) {
  const __m512d d = _mm512_cvtps_pd(v);
  return _mm512_fmadd_pd(d, d, acc);
}

}  // namespace

bool fill_screen_panels(ArgmaxScreen& s, const uint8_t* panels, int64_t first_panel, int64_t last_panel) {
  const int64_t n_blocks = s.n_cols / 32;
  constexpr size_t kCodesBytes = 8 * 64;                        // per panel block: 8 groups of 16 rows x 4 codes
  constexpr size_t kBlockBytes = kCodesBytes + 2 * kPanelRows;  // then the 16 rows' F16 scales
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const double row_slack = slack(s.n_cols);
  for (int64_t panel = first_panel; panel < last_panel; ++panel) {
    const uint8_t* blocks = panels + static_cast<size_t>(panel) * static_cast<size_t>(n_blocks) * kBlockBytes;
    // Lane r of every vector below is row r of the panel: each dword of a code vector holds
    // four of that row's codes.
    __m512 max_abs = _mm512_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
      const uint8_t* block = blocks + b * kBlockBytes;
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + kCodesBytes)));
      const __mmask16 finite = _mm512_cmp_ps_mask(_mm512_abs_ps(d), _mm512_set1_ps(65504.0f), _CMP_LE_OQ);
      if (finite != 0xffff) return false;
      __m512i largest = _mm512_setzero_si512();
      for (int k = 0; k < 8; ++k) {
        const __m512i q = _mm512_xor_si512(_mm512_loadu_si512(block + 64 * k), flip);
        largest = _mm512_max_epu8(largest, _mm512_abs_epi8(q));
      }
      // The largest of each dword's four bytes.
      largest = _mm512_max_epu8(largest, _mm512_srli_epi32(largest, 16));
      largest = _mm512_max_epu8(largest, _mm512_srli_epi32(largest, 8));
      const __m512 q_max = _mm512_cvtepi32_ps(_mm512_and_si512(largest, _mm512_set1_epi32(0xff)));
      max_abs = _mm512_max_ps(max_abs, _mm512_mul_ps(q_max, _mm512_abs_ps(d)));
    }
    const __m512 scale = _mm512_div_ps(max_abs, _mm512_set1_ps(127.0f));
    const __mmask16 nonzero = _mm512_cmp_ps_mask(scale, _mm512_setzero_ps(), _CMP_GT_OQ);
    __m512d dw2[2] = {_mm512_setzero_pd(), _mm512_setzero_pd()};  // ||dw||^2, rows 0-7 and 8-15
    __m512d w2[2] = {_mm512_setzero_pd(), _mm512_setzero_pd()};   // ||w'||^2
    uint8_t* tiles = s.levels.get() + static_cast<size_t>(panel) * static_cast<size_t>(s.n_cols) * kPanelRows;
    for (int64_t b = 0; b < n_blocks; ++b) {
      const uint8_t* block = blocks + b * kBlockBytes;
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + kCodesBytes)));
      const __m512 to_level = _mm512_maskz_div_ps(nonzero, d, scale);
      // Block b's eight code groups are tile rows 8 (b % 2) .. 8 (b % 2) + 7 of the tile of
      // step b / 2: the same bytes, each code replaced by its level.
      uint8_t* out = tiles + b * kCodesBytes;
      for (int k = 0; k < 8; ++k) {
        const __m512i q = _mm512_xor_si512(_mm512_loadu_si512(block + 64 * k), flip);
        __m512i packed = _mm512_setzero_si512();
        for (int m = 0; m < 4; ++m) {
          const __m512i code = _mm512_srai_epi32(_mm512_slli_epi32(q, 24 - 8 * m), 24);
          const __m512 codef = _mm512_cvtepi32_ps(code);
          __m512i p = _mm512_cvtps_epi32(_mm512_mul_ps(codef, to_level));  // rounded to nearest
          p = _mm512_max_epi32(_mm512_min_epi32(p, _mm512_set1_epi32(127)), _mm512_set1_epi32(-127));
          const __m512 requantized = _mm512_mul_ps(_mm512_cvtepi32_ps(p), scale);
          const __m512 dw = _mm512_sub_ps(_mm512_mul_ps(codef, d), requantized);  // d q is exact
          dw2[0] = square_add(_mm512_castps512_ps256(dw), dw2[0]);
          dw2[1] = square_add(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(dw), 1)), dw2[1]);
          w2[0] = square_add(_mm512_castps512_ps256(requantized), w2[0]);
          w2[1] = square_add(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(requantized), 1)), w2[1]);
          packed = _mm512_or_si512(packed, _mm512_slli_epi32(_mm512_and_si512(p, _mm512_set1_epi32(0xff)), 8 * m));
        }
        _mm512_storeu_si512(out + 64 * k, packed);
      }
    }
    alignas(64) float scales[16];
    alignas(64) double dw2s[16], w2s[16];
    _mm512_store_ps(scales, scale);
    _mm512_store_pd(dw2s, dw2[0]);
    _mm512_store_pd(dw2s + 8, dw2[1]);
    _mm512_store_pd(w2s, w2[0]);
    _mm512_store_pd(w2s + 8, w2[1]);
    for (int r = 0; r < 16; ++r) {
      const size_t row = static_cast<size_t>(panel * kPanelRows + r);
      const double dw_norm = std::sqrt(dw2s[r]), w_norm = std::sqrt(w2s[r]);
      s.scale[row] = scales[r];
      s.x_factor[row] = static_cast<float>((dw_norm + row_slack * (w_norm + dw_norm)) * (1 + kMargin));
      s.dx_factor[row] = static_cast<float>(w_norm * (1 + kMargin));
    }
  }
  return true;
}

void screen_panels(const ArgmaxScreen& s, int64_t first_panel, int64_t last_panel, const int8_t* y,
                   const int8_t* z, const ScreenToken* tokens, int64_t n_tokens, ScreenCandidates* candidates) {
  const int64_t n_steps = s.n_cols / kScreenStep;
  const int64_t panel_bytes = s.n_cols * 16;
  const int64_t tile_bytes = panel_bytes;  // a tile of 16 activation rows' levels: n_steps blocks of 1 KB
  const int64_t n_tiles = (n_tokens + kTileTokens - 1) / kTileTokens;
  alignas(64) int32_t sums[4][kTileTokens * 16];  // p.y, p.z of panel p, then of panel p + 1
  _tile_loadconfig(&kScreenTileConfig);
  for (int64_t block = first_panel; block < last_panel; block += kBlockPanels) {
    const int64_t block_end = block + kBlockPanels < last_panel ? block + kBlockPanels : last_panel;
    for (int64_t tile = 0; tile < n_tiles; ++tile) {
      const int8_t* tile_y = y + tile * tile_bytes;
      const int8_t* tile_z = z + tile * tile_bytes;
      const int64_t first = tile * kTileTokens;
      const int64_t n_here = n_tokens - first < kTileTokens ? n_tokens - first : kTileTokens;
      for (int64_t panel = block; panel < block_end; panel += 2) {
        const uint8_t* levels = s.panel_levels(panel);
        const size_t row0 = static_cast<size_t>(panel) * 16;
        if (panel + 1 < block_end) {
          screen_tile<true>(levels, panel_bytes, tile_y, tile_z, n_steps, sums);
          add_candidates(sums[0], sums[1], s, row0, tokens + first, candidates + first, n_here);
          add_candidates(sums[2], sums[3], s, row0 + 16, tokens + first, candidates + first, n_here);
        } else {
          screen_tile<false>(levels, panel_bytes, tile_y, tile_z, n_steps, sums);
          add_candidates(sums[0], sums[1], s, row0, tokens + first, candidates + first, n_here);
        }
      }
    }
  }
  _tile_release();
}

}  // namespace tokenmill::quant::amx
