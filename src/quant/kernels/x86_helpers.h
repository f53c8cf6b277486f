// Small helpers for the *_avx2.cc and *_avx512.cc kernel files only.
//
// Everything here has internal linkage (an anonymous namespace) on purpose: this header
// is compiled with -mavx2 in some files and with -mavx512* in others, and an inline
// function with external linkage would be merged by the linker into one copy, possibly
// one with AVX-512 instructions, which an AVX2-only CPU would then run. For the same
// reason the kernel files call no inline or template functions from other headers
// (std::min, base/half.h): only intrinsics and plain arithmetic.
#pragma once

#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "x86_helpers.h is for files compiled with -mavx2 -mfma -mf16c (name them *_avx2.cc)"
#endif

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "quant/kernels/simd_kernels.h"
#include "quant/type_traits.h"

namespace tokenmill::quant {
namespace {

// tile(std::integral_constant<int, size>{}, t) for the size (1 .. kSize) given at run time.
template <int kSize, typename Tile>
void dispatch_tile_size(int size, int64_t t, Tile& tile) {
  if constexpr (kSize >= 1) {
    if (size == kSize) {
      tile(std::integral_constant<int, kSize>{}, t);
    } else {
      dispatch_tile_size<kSize - 1>(size, t, tile);
    }
  }
}

// Calls tile(n, first token) over n_tokens tokens: tiles of kTile, then one of the rest,
// n as a std::integral_constant (a tile's accumulators live in registers, so its size
// must be known at compile time).
template <int kTile, typename Tile>
void for_token_tiles(int64_t n_tokens, Tile&& tile) {
  int64_t t = 0;
  for (; t + kTile <= n_tokens; t += kTile) tile(std::integral_constant<int, kTile>{}, t);
  if (n_tokens > t) dispatch_tile_size<kTile - 1>(static_cast<int>(n_tokens - t), t, tile);
}

// Prefill's loop order for kernels that read the activations again for every weight
// row: the activations a block of tokens at a time that stays in L2
// (kActivationBlockBytes, at least kMinTokens tokens), and within a block the weight rows
// (of Blocks, w_stride bytes apart) kRows at a time, the rows past the last group one at a
// time. Calls tile(rows, first_row, first_token, n_tokens), rows a const Block* [W] of the
// group's rows (W = kRows or 1: an array, so its size is known at compile time).
template <typename Block, int kRows, int64_t kMinTokens, typename Tile>
void for_row_groups_by_token_blocks(const uint8_t* weight_rows, size_t w_stride, int64_t n_w_rows, int64_t n_a_rows,
                                    size_t a_stride, Tile&& tile) {
  // A stride of 0 (one activation row, as the one-row forms pass it) fits whole.
  const int64_t fit = a_stride == 0 ? n_a_rows : static_cast<int64_t>(kActivationBlockBytes / a_stride);
  const int64_t block = fit > kMinTokens ? fit : kMinTokens;
  auto group = [&](auto size, int64_t first_row, int64_t t0, int64_t n_tokens) {
    const Block* rows[decltype(size)::value];
    for (int w = 0; w < decltype(size)::value; ++w) {
      rows[w] = reinterpret_cast<const Block*>(weight_rows + (first_row + w) * w_stride);
    }
    tile(rows, first_row, t0, n_tokens);
  };
  for (int64_t t0 = 0; t0 < n_a_rows; t0 += block) {
    const int64_t n_tokens = n_a_rows - t0 < block ? n_a_rows - t0 : block;
    int64_t r = 0;
    for (; r + kRows <= n_w_rows; r += kRows) group(std::integral_constant<int, kRows>{}, r, t0, n_tokens);
    for (; r < n_w_rows; ++r) group(std::integral_constant<int, 1>{}, r, t0, n_tokens);
  }
}

// IEEE half to float with F16C (exact, as base/half.h's f16_to_f32).
inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

// Round to nearest even, as base/half.h's f32_to_f16 for every finite float.
inline uint16_t float_to_half(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

inline uint32_t load_u32(const uint8_t* bytes) {
  uint32_t value;
  std::memcpy(&value, bytes, sizeof value);
  return value;
}

// The 4 bytes at p in every dword lane. vbroadcastss from memory is one load; the
// set1_epi32(load) spelling compiles to a general-register load, vmovd and vpbroadcastd
// (the last on a shuffle port), which in an inner loop costs more than the dot product.
inline __m256i broadcast_dword(const void* p) {
  return _mm256_castps_si256(_mm256_broadcast_ss(static_cast<const float*>(p)));
}

// Rows per cache panel of a matrix kernel: the panel's weights (about kPanelBytes) stay
// in the core's L2 cache while every token tile passes over them, so each weight byte
// comes from memory once per matmul and each activation row once per panel (a row
// outer loop instead re-reads every token's activations for every weight row).
constexpr int64_t kPanelBytes = 256 * 1024;
// A row size of 0 (a caller's stride for a single row) gives one tile.
inline int64_t panel_rows(size_t row_bytes, int64_t row_tile) {
  const int64_t rows = row_bytes == 0 ? 0 : kPanelBytes / static_cast<int64_t>(row_bytes);
  return rows < row_tile ? row_tile : rows / row_tile * row_tile;
}

inline __m256i load_256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m128i load_128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

inline float hsum_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// v, as a value the compiler must have in a register here. A running sum passed through
// this after each add stays a chain: GCC otherwise reassociates a tile's integer adds into
// trees whose pending products outnumber the 16 AVX2 registers and are spilled to the
// stack, which in a many-token tile costs more than the arithmetic.
inline __m256i in_register(__m256i v) {
  asm("" : "+x"(v));
  return v;
}

inline __m128 in_register(__m128 v) {
  asm("" : "+x"(v));
  return v;
}

// Lane r = the total of acc[r]'s eight lanes (exact integer adds), for r < R; 0 beyond.
template <int R>
inline __m128i lane_totals(const __m256i* acc) {
  static_assert(R >= 1 && R <= 4);
  const __m256i zero = _mm256_setzero_si256();
  const __m256i h01 = _mm256_hadd_epi32(acc[0], R > 1 ? acc[1 % R] : zero);
  const __m256i h23 = _mm256_hadd_epi32(R > 2 ? acc[2 % R] : zero, R > 3 ? acc[3 % R] : zero);
  const __m256i h = _mm256_hadd_epi32(h01, h23);
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// Lane r: rows[r] for r < R, 0 above; built in registers (a store of the values and a
// 16-byte load of them would miss store forwarding, a stall per call).
template <int R>
inline __m128 lanes_of(const float* rows) {
  static_assert(R >= 1 && R <= 4);
  if constexpr (R == 1) return _mm_set_ss(rows[0]);
  if constexpr (R == 2) return _mm_setr_ps(rows[0], rows[1], 0.0f, 0.0f);
  if constexpr (R == 3) return _mm_setr_ps(rows[0], rows[1], rows[2], 0.0f);
  if constexpr (R == 4) return _mm_setr_ps(rows[0], rows[1], rows[2], rows[3]);
}

// The lane sums of a and b, in lanes 0 and 1 of the result (one reduction for both).
inline __m128i hsum2_epi32(__m256i a, __m256i b) {
  const __m256i pairs = _mm256_add_epi32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
  const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(pairs), _mm256_extracti128_si256(pairs, 1));
  return _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
}

inline float hmax_ps(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

// 32 nibbles of a legacy block (16 bytes) in element order: low nibbles are elements
// 0..15, high nibbles 16..31. Values 0..15.
inline __m256i unpack_legacy_nibbles(const uint8_t* qs) {
  const __m128i packed = load_128(qs);
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

// Sums of products of signed bytes w and a in groups of four, as 8 int32:
// |w| * (a with w's sign) keeps maddubs' unsigned x signed form exact.
// REQUIRES: a in [-127, 127] (so no pair of products saturates the int16).
inline __m256i dot_i8_avx2(__m256i w, __m256i a) {
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

// Q4_K / Q5_K: the eight 6-bit sub-block scales and mins (layout in blocks.h) as bytes
// [sc0 .. sc7, mn0 .. mn7], computed four at a time in 32-bit words. (Going through a
// byte array instead makes the compiler assemble the vector from single-byte stores,
// which stalls store-to-load forwarding on every super-block.)
inline __m128i unpack_k4_scales(const uint8_t* packed) {
  const uint32_t w0 = load_u32(packed), w1 = load_u32(packed + 4), w2 = load_u32(packed + 8);
  const uint32_t scales_0_3 = w0 & 0x3f3f3f3fu;
  const uint32_t mins_0_3 = w1 & 0x3f3f3f3fu;
  const uint32_t scales_4_7 = (w2 & 0x0f0f0f0fu) | (((w0 >> 6) & 0x03030303u) << 4);
  const uint32_t mins_4_7 = ((w2 >> 4) & 0x0f0f0f0fu) | (((w1 >> 6) & 0x03030303u) << 4);
  return _mm_set_epi32(static_cast<int>(mins_4_7), static_cast<int>(mins_0_3), static_cast<int>(scales_4_7),
                       static_cast<int>(scales_0_3));
}

// Bytes [from, to) of a weight stream requested in equal parts over n_steps steps of a
// kernel: the lines of the panel that comes next stream in while this one is computed
// (side-by-side rows are streams the hardware prefetcher does not follow well). A
// cursor, so that the block loops divide nothing.
class PrefetchCursor {
 public:
  PrefetchCursor(const uint8_t* base, int64_t from, int64_t to, int64_t n_steps)
      : next_(reinterpret_cast<const char*>(base) + (from + 63) / 64 * 64),
        end_(reinterpret_cast<const char*>(base) + to),
        bytes_per_step_(((to - from) / (n_steps > 0 ? n_steps : 1) + 127) / 64 * 64) {}
  void step() {
    for (int64_t i = 0; i < bytes_per_step_ && next_ < end_; i += 64, next_ += 64) _mm_prefetch(next_, _MM_HINT_T0);
  }

 private:
  const char* next_;
  const char* end_;
  int64_t bytes_per_step_;
};

// Folds 8 results (columns first_column ...) into m in column order: the first of the
// largest, never NaN (see RunningMax).
__attribute__((always_inline)) inline void fold_running_max(__m256 x, int64_t first_column, RunningMax& m) {
  if (_mm256_movemask_ps(_mm256_cmp_ps(x, _mm256_set1_ps(m.value), _CMP_GT_OQ)) == 0) return;
  alignas(32) float v[8];
  _mm256_store_ps(v, x);
  for (int i = 0; i < 8; ++i) {
    if (v[i] > m.value) {
      m.value = v[i];
      m.column = static_cast<int32_t>(first_column + i);
    }
  }
}

#if defined(__AVX512F__)

inline __m512i load_512(const void* p) { return _mm512_loadu_si512(p); }

// Folds 16 results (columns first_column ...) into m (see RunningMax), from registers: one
// compare while none beats the maximum so far, the common case. (Reloading them after
// the store cost as much as a later scan of all the logits: a token's results are a row
// of the output apart, and 16 tokens' lines share one L1 set.)
__attribute__((always_inline)) inline void fold_running_max(__m512 x, int64_t first_column, RunningMax& m) {
  const __mmask16 above = _mm512_cmp_ps_mask(x, _mm512_set1_ps(m.value), _CMP_GT_OQ);  // false for NaN
  if (above == 0) return;
  const float top = _mm512_mask_reduce_max_ps(above, x);
  const __mmask16 at_top = _mm512_mask_cmp_ps_mask(above, x, _mm512_set1_ps(top), _CMP_EQ_OQ);
  m.value = top;
  m.column = static_cast<int32_t>(first_column + __builtin_ctz(at_top));
}

// Two 256-bit halves into one register: lo in lanes 0..7, hi in lanes 8..15.
inline __m512i combine_256(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// A float vector whose lanes 0..7 are `lo` and lanes 8..15 are `hi`.
inline __m512 broadcast_pair(float lo, float hi) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(lo)), _mm256_set1_ps(hi), 1);
}

#endif  // __AVX512F__

// Decode streams each weight once from memory, and the hardware prefetcher alone leaves
// bandwidth idle: requests the lines of the block kBytes past `block` (past a row's end
// that is the next row, rows being contiguous; past the matrix's end, harmless).
template <int64_t kBytes, typename Block>
inline void prefetch_ahead(const Block* block) {
  const char* p = reinterpret_cast<const char*>(block) + kBytes;
  for (size_t line = 0; line < sizeof(Block); line += 64) _mm_prefetch(p + line, _MM_HINT_T0);
}

}  // namespace
}  // namespace tokenmill::quant
