// The IQ4_NL, IQ4_XS and MXFP4 dot products with AVX-512 VNNI: vpdpbusd on 256 bits; the body is iq4_x86-inl.h.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels/scratch.h"
#include "quant/kernels/simd_kernels.h"

namespace tokenmill::quant::avx512 {

namespace {

struct Iq4Dot {
  static __m256i dot(__m256i acc, __m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(acc, u, s);
  }
};

#include "quant/kernels/iq4_x86-inl.h"

// IQ4_XS on 512 bits: two groups per vector. The levels are looked up offset by +128
// (unsigned, as vpdpbusd wants them), and the offset's share, 128 * (sum of the group's
// activations), comes off through Q8_K's bsums: the same exact integer per super-block as
// the 256-bit body, so the same bits.
template <int R>
void iq4_xs_tile_512(int64_t nb, const BlockIQ4_XS* x, const uint8_t* a, size_t a_stride, float* out,
                     int64_t out_stride) {
  const __m512i levels = _mm512_broadcast_i32x4(_mm_setr_epi8(
      1, 24, 45, 63, 79, 93, 106, 118, -127, -115, -103, -90, -75, -59, -39, -15));  // level + 128, as bytes
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  // Group pair p's 16 lanes: group 2p's scale in the low 8, group 2p+1's in the high 8.
  const __m512i pair_index[4] = {
      _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
      _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3),
      _mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5),
      _mm512_setr_epi32(6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7)};
  // 128-bit lanes [lo0 hi0 lo1 hi1]: group 2p's low then high nibbles, then group 2p+1's.
  const __m512i interleave = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
  const __m256i low_shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  const __m256i high_shifts = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
  const BlockQ8_K* y[R];
  for (int r = 0; r < R; ++r) y[r] = reinterpret_cast<const BlockQ8_K*>(a + static_cast<size_t>(r) * a_stride);
  float sums[R] = {};
  for (int64_t b = 0; b < nb; ++b) {
    uint32_t scales_l;
    std::memcpy(&scales_l, x[b].scales_l, sizeof scales_l);
    const __m256i low = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int32_t>(scales_l)), low_shifts),
                                         _mm256_set1_epi32(0xf));
    const __m256i high = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(x[b].scales_h), high_shifts),
                                          _mm256_set1_epi32(3));
    const __m256i scales = _mm256_sub_epi32(_mm256_or_si256(low, _mm256_slli_epi32(high, 4)), _mm256_set1_epi32(32));
    const __m512i scales512 = _mm512_castsi256_si512(scales);
    __m512i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
    for (int p = 0; p < 4; ++p) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs + 32 * p));
      const __m512i lo = _mm512_castsi256_si512(_mm256_and_si256(q, _mm512_castsi512_si256(low4)));
      const __m512i hi = _mm512_castsi256_si512(_mm256_and_si256(_mm256_srli_epi16(q, 4), _mm512_castsi512_si256(low4)));
      const __m512i w = _mm512_shuffle_epi8(levels, _mm512_permutex2var_epi64(lo, interleave, hi));
      const __m512i s = _mm512_permutexvar_epi32(pair_index[p], scales512);
      for (int r = 0; r < R; ++r) {
        const __m512i act = _mm512_loadu_si512(y[r][b].qs + 64 * p);
        acc[r] = _mm512_add_epi32(acc[r], _mm512_mullo_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), w, act), s));
      }
    }
    const float dw = iq4_half(x[b].d);
    for (int r = 0; r < R; ++r) {
      // sum_g s_g * (sum of group g's activations), from the 16-element bsums.
      const __m256i group_sums = _mm256_madd_epi16(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[r][b].bsums)), _mm256_set1_epi16(1));
      const int32_t offset_share = iq4_total(_mm256_mullo_epi32(group_sums, scales));
      const int32_t isum = _mm512_reduce_add_epi32(acc[r]) - 128 * offset_share;
      sums[r] = iq4_fma(dw * y[r][b].d, static_cast<float>(isum), sums[r]);
    }
  }
  for (int r = 0; r < R; ++r) out[r * out_stride] = sums[r];
}

template <int R>
struct Iq4XsTile512 {
  static void run(int64_t nb, const BlockIQ4_XS* x, const uint8_t* a, size_t a_stride, float* out, int64_t out_stride) {
    iq4_xs_tile_512<R>(nb, x, a, a_stride, out, out_stride);
  }
};

// MXFP4 on its repacked layout (quant/panel_layout.h): each row's blocks in groups of 8,
// chunk i of a group (32 bytes) holding the packed nibbles of dword i of its 8 blocks, lane
// k for block k, then the 8 exponents; the last n_blocks % 8 blocks as in the file. A
// group's weights are then 8 vectors W[j], lane k = 4 weights of block k (j < 4: elements
// 4j..4j+3, low nibbles; j >= 4: elements 16 + 4(j - 4).., high nibbles), looked up as
// level + 12 (unsigned, as vpdpbusd wants them). Tokens are staged to match: A[j] lane k =
// dword j of block k's quants, so that 8 vpdpbusd leave block k's exact sum of (level + 12)
// * a in lane k, and 12 * (block k's activation sum) comes off it: the reference's integer
// per block, already in the lane the reference fuses it into (block b in lane b % 8, float
// steps of kernels_ref.h). So the bits are the reference's, as in the row kernel.
constexpr int kMxGroupBlocks = 8;
constexpr size_t kMxGroupBytes = kMxGroupBlocks * sizeof(BlockMXFP4);
constexpr int kMxTokenTile = 8;    // tokens per unpacking of a group's weights
constexpr int kMxTokenChunk = 64;  // tokens staged at once

struct StagedMxGroup {  // one token, one group of 8 blocks
  __m256i a[8];
  __m256i offset;  // lane k: 12 * the sum of block k's activations
  __m256 d;        // lane k: block k's activation scale
};

void stage_mx_tokens(int64_t n_groups, const uint8_t* a, size_t a_stride, int64_t n_tokens, StagedMxGroup* out) {
  for (int64_t t = 0; t < n_tokens; ++t) {
    const auto* y = reinterpret_cast<const BlockQ8_0*>(a + static_cast<size_t>(t) * a_stride);
    for (int64_t g = 0; g < n_groups; ++g) {
      StagedMxGroup& s = out[t * n_groups + g];
      alignas(32) int32_t dwords[8][8];
      alignas(32) int32_t offset[8];
      alignas(32) float d[8];
      for (int k = 0; k < kMxGroupBlocks; ++k) {
        const BlockQ8_0& block = y[g * kMxGroupBlocks + k];
        int32_t sum = 0;
        for (int j = 0; j < 8; ++j) std::memcpy(&dwords[j][k], block.qs + 4 * j, 4);
        for (int i = 0; i < kLegacyBlockSize; ++i) sum += block.qs[i];
        offset[k] = 12 * sum;
        d[k] = iq4_half(block.d);
      }
      for (int j = 0; j < 8; ++j) s.a[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(dwords[j]));
      s.offset = _mm256_load_si256(reinterpret_cast<const __m256i*>(offset));
      s.d = _mm256_load_ps(d);
    }
  }
}

// One weight row (repacked) against kTokens staged tokens: each token's result, as the
// reference sums it.
template <int kTokens>
void mx_row_tile(int64_t nb, const uint8_t* row, const StagedMxGroup* staged, int64_t n_groups,
                 const uint8_t* a, size_t a_stride, float* results) {
  const __m256i levels = _mm256_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0,  //
                                          12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0);
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  __m256 lanes[kTokens];
  for (int t = 0; t < kTokens; ++t) lanes[t] = _mm256_setzero_ps();
  const int64_t full = nb / kMxGroupBlocks;
  for (int64_t g = 0; g < full; ++g) {
    const uint8_t* group = row + static_cast<size_t>(g) * kMxGroupBytes;
    __m256i w[8];
    for (int i = 0; i < 4; ++i) {
      const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(group + 32 * i));
      w[i] = _mm256_shuffle_epi8(levels, _mm256_and_si256(packed, low4));
      w[4 + i] = _mm256_shuffle_epi8(levels, _mm256_and_si256(_mm256_srli_epi16(packed, 4), low4));
    }
    // 2^(e - 128): (e - 1) << 23, or the subnormal 0x00200000 << e for e < 2.
    const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(group + 128)));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i small = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    const __m256 dw = _mm256_castsi256_ps(_mm256_blendv_epi8(normal, small, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e)));
    for (int t = 0; t < kTokens; ++t) {
      const StagedMxGroup& s = staged[t * n_groups + g];
      __m256i acc = _mm256_dpbusd_epi32(_mm256_setzero_si256(), w[0], s.a[0]);
      for (int j = 1; j < 8; ++j) acc = _mm256_dpbusd_epi32(acc, w[j], s.a[j]);
      const __m256i isum = _mm256_sub_epi32(acc, s.offset);
      lanes[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, s.d), _mm256_cvtepi32_ps(isum), lanes[t]);
    }
  }
  const auto* tail = reinterpret_cast<const BlockMXFP4*>(row + static_cast<size_t>(full) * kMxGroupBytes);
  const __m256i signed_levels = Mxfp4Format::levels();
  for (int t = 0; t < kTokens; ++t) {
    alignas(32) float l[8];
    _mm256_store_ps(l, lanes[t]);
    const auto* y = reinterpret_cast<const BlockQ8_0*>(a + static_cast<size_t>(t) * a_stride);
    for (int64_t b = full * kMxGroupBlocks; b < nb; ++b) {  // block b's lane is b % 8
      const BlockMXFP4& x = tail[b - full * kMxGroupBlocks];
      const __m256i w = iq4_group(x.qs, signed_levels);
      const int32_t isum = iq4_total(iq4_partials(w, _mm256_abs_epi8(w), y[b].qs));
      l[b % 8] = iq4_fma(mxfp4_scale(x.e) * iq4_half(y[b].d), static_cast<float>(isum), l[b % 8]);
    }
    results[t] = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
  }
}

}  // namespace

void vec_dot_panels_mxfp4_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                               int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max) {
  const int64_t nb = n / kLegacyBlockSize;
  const int64_t n_groups = nb / kMxGroupBlocks;
  const size_t row_bytes = static_cast<size_t>(nb) * sizeof(BlockMXFP4);
  const auto* weights = static_cast<const uint8_t*>(w);
  const auto* activations = static_cast<const uint8_t*>(a);
  auto* staged = static_cast<StagedMxGroup*>(thread_scratch(
      ScratchSlot::kStagedQuants, sizeof(StagedMxGroup) * static_cast<size_t>(std::max<int64_t>(n_groups, 1)) * kMxTokenChunk));
  for (int64_t t0 = 0; t0 < n_a_rows; t0 += kMxTokenChunk) {
    const int64_t n_tokens = std::min<int64_t>(kMxTokenChunk, n_a_rows - t0);
    const uint8_t* chunk = activations + static_cast<size_t>(t0) * a_stride;
    stage_mx_tokens(n_groups, chunk, a_stride, n_tokens, staged);
    for (int64_t r = 0; r < n_w_rows; ++r) {
      const uint8_t* row = weights + static_cast<size_t>(r) * row_bytes;
      for (int64_t t = 0; t < n_tokens; t += kMxTokenTile) {
        float results[kMxTokenTile];
        const StagedMxGroup* s = staged + t * n_groups;
        const uint8_t* y = chunk + static_cast<size_t>(t) * a_stride;
        const int64_t tile = std::min<int64_t>(kMxTokenTile, n_tokens - t);
        switch (tile) {
          case 8: mx_row_tile<8>(nb, row, s, n_groups, y, a_stride, results); break;
          case 7: mx_row_tile<7>(nb, row, s, n_groups, y, a_stride, results); break;
          case 6: mx_row_tile<6>(nb, row, s, n_groups, y, a_stride, results); break;
          case 5: mx_row_tile<5>(nb, row, s, n_groups, y, a_stride, results); break;
          case 4: mx_row_tile<4>(nb, row, s, n_groups, y, a_stride, results); break;
          case 3: mx_row_tile<3>(nb, row, s, n_groups, y, a_stride, results); break;
          case 2: mx_row_tile<2>(nb, row, s, n_groups, y, a_stride, results); break;
          default: mx_row_tile<1>(nb, row, s, n_groups, y, a_stride, results); break;
        }
        for (int64_t i = 0; i < tile; ++i) {
          const float v = results[i];
          if (out != nullptr) out[(t0 + t + i) * out_stride + r] = v;
          if (row_max != nullptr && v > row_max[t0 + t + i].value) row_max[t0 + t + i] = {v, static_cast<int32_t>(r)};
        }
      }
    }
  }
}

void vec_dot_rows_iq4_nl_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                              float* out, int64_t out_stride) {
  iq4_rows<BlockIQ4_NL, Iq4NlTile>(n, w, a, a_stride, n_a_rows, out, out_stride, kLegacyBlockSize);
}

void vec_dot_rows_iq4_xs_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                              float* out, int64_t out_stride) {
  iq4_rows<BlockIQ4_XS, Iq4XsTile512>(n, w, a, a_stride, n_a_rows, out, out_stride, kSuperBlockSize);
}

void vec_dot_rows_mxfp4_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                             float* out, int64_t out_stride) {
  iq4_rows<BlockMXFP4, Mxfp4Tile>(n, w, a, a_stride, n_a_rows, out, out_stride, kLegacyBlockSize);
}

}  // namespace tokenmill::quant::avx512
