// AVX-512 dot products of Q4_K, Q5_K and Q6_K with Q8_K activation rows. Q5_K and Q6_K:
// the scheme of kquants_avx2.cc, 64 quants per step, with vpdpwssd (VNNI) applying the
// sub-block scales to the int16 pair sums; Q4_K: vpdpbusd on regrouped quants (below). Each weight super-block is unpacked once and dotted
// with up to kTokenTile activation rows (prefill, batched decode).

// GCC 12's AVX-512 headers seed some intrinsics with _mm512_undefined_*(), which
// -Wuninitialized then reports at every use: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "quant/blocks.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant::avx512 {

namespace {

// A vector of 32 int16 whose lanes 0..15 are index `lo` and lanes 16..31 index `hi` of
// the 16 int16 held in a 256-bit register (for permutexvar).
__m512i split_index(int lo, int hi) {
  return combine_256(_mm256_set1_epi16(static_cast<int16_t>(lo)), _mm256_set1_epi16(static_cast<int16_t>(hi)));
}

// Q4_K / Q5_K sub-block scales and mins as bytes [sc0 .. sc7, mn0 .. mn7] (the layout of
// unpack_k4_scales), in vector registers: the 12 packed bytes are read as words
// w0 w1 w2 and
//   sc0..3 = w0 & 0x3f..   sc4..7 = (w2 & 0x0f..) | ((w0 >> 2) & 0x30..)
//   mn0..3 = w1 & 0x3f..   mn4..7 = ((w2 >> 4) & 0x0f..) | ((w1 >> 2) & 0x30..)
// REQUIRES: 16 readable bytes at `packed` (the block's quants follow its scales).
__m128i unpack_k4_scales_vector(const uint8_t* packed) {
  const __m128i words = load_128(packed);
  const __m128i low = _mm_srlv_epi32(_mm_shuffle_epi32(words, _MM_SHUFFLE(2, 1, 2, 0)), _mm_setr_epi32(0, 0, 0, 4));
  const __m128i high = _mm_srli_epi32(_mm_shuffle_epi32(words, _MM_SHUFFLE(1, 1, 0, 0)), 2);
  return _mm_or_si128(_mm_and_si128(low, _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f)),
                      _mm_and_si128(high, _mm_setr_epi32(0, 0x30303030, 0, 0x30303030)));
}

// The per-row part of each format, unpacked once per super-block and shared by every
// activation row of a tile; `dot_tile` below runs any of them against kTokens
// activation rows. Per (row, token) the operations and their order are those of the
// single dot product (kTokens = 1), so every tile shape gives the same bits.

constexpr int kTokenTile = 4;

// Decode streams each weight once from memory; the hardware prefetcher alone leaves
// bandwidth unused on this machine (a plain read of 1 GiB: 45 GB/s, with prefetches a
// few KB ahead: 50), so the single-token kernels prefetch kPrefetchBytes ahead of the
// super-block they read (past a row's end that is the next row: rows are contiguous;
// past the matrix's end a prefetch is harmless).
constexpr int64_t kPrefetchBytes = 8192;
template <typename Block>
inline void prefetch_ahead(const Block* block) {
  const char* p = reinterpret_cast<const char*>(block) + kPrefetchBytes;
  for (size_t line = 0; line < sizeof(Block); line += 64) _mm_prefetch(p + line, _MM_HINT_T0);
}

// Q4_K runs against activation rows whose quants are regrouped (permute_for_q4_K) so
// that one vpdpbusd of four steps serves each sub-block: in step s (0..3) of a
// super-block, int32 lanes 2j and 2j + 1 hold quants 32j + 8s .. 32j + 8s + 7 of
// sub-block j. Four vpdpbusd (u4 weights x s8 activations) then leave in lanes 2j, 2j+1
// integer sums of sub-block j alone (|sum| <= 4 * 4 * 15 * 128 < 2^15), and one
// vpmaddwd against (scale_j, 0) int16 pairs applies the 6-bit scales: five multiplies
// per 256 quants and token where maddubs + dpwssd need eight. The weights are regrouped
// to match once per super-block and shared by every token of a tile.
//
// Activation layout: step s occupies qs[64s .. 64s + 63]; its 8-byte group j is
// elements 32j + 8s .. 32j + 8s + 7. d and bsums are unchanged.
void permute_for_q4_K(const BlockQ8_K* src, BlockQ8_K* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    dst[b].d = src[b].d;
    std::memcpy(dst[b].bsums, src[b].bsums, sizeof dst[b].bsums);
    for (int step = 0; step < 4; ++step) {
      for (int j = 0; j < 8; ++j) std::memcpy(dst[b].qs + 64 * step + 8 * j, src[b].qs + 32 * j + 8 * step, 8);
    }
  }
}

// acc[t] collects d * (scaled integer sums) in 16 lanes, acc_min[t] the dmin * min terms
// in 8; result = reduce_add(acc) - hsum(acc_min). `a` rows are in permute_for_q4_K's layout.
template <int kTokens>
void q4_K_row(int64_t n, const BlockQ4_K* x, const uint8_t* a, size_t a_stride, float* out, int64_t out_stride) {
  const __m512i low_nibble = _mm512_set1_epi8(0x0f);
  // bsums group j (16 quants) pairs with min j / 2 (scale byte 8 + j / 2), as int16.
  const __m512i min_index = _mm512_castsi256_si512(_mm256_setr_epi16(
      0xff08, 0xff08, 0xff09, 0xff09, 0xff0a, 0xff0a, 0xff0b, 0xff0b,
      0xff0c, 0xff0c, 0xff0d, 0xff0d, 0xff0e, 0xff0e, 0xff0f, 0xff0f));
  // int32 lane L = scale byte L / 2, zero-extended (lanes 4q .. 4q + 3 sit in 128-bit lane q).
  const __m512i scale_index = _mm512_set_epi32(
      static_cast<int>(0x80808007), static_cast<int>(0x80808007), static_cast<int>(0x80808006),
      static_cast<int>(0x80808006), static_cast<int>(0x80808005), static_cast<int>(0x80808005),
      static_cast<int>(0x80808004), static_cast<int>(0x80808004), static_cast<int>(0x80808003),
      static_cast<int>(0x80808003), static_cast<int>(0x80808002), static_cast<int>(0x80808002),
      static_cast<int>(0x80808001), static_cast<int>(0x80808001), static_cast<int>(0x80808000),
      static_cast<int>(0x80808000));
  // Step s: 128-bit lane m = 8-byte group s of the 32-byte chunk m, twice; the first copy
  // gives its low nibbles (sub-block 2m), the second its high nibbles (sub-block 2m + 1).
  __m512i step_index[4];
  for (int step = 0; step < 4; ++step) {
    step_index[step] = _mm512_add_epi64(_mm512_set1_epi64(step), _mm512_set_epi64(12, 12, 8, 8, 4, 4, 0, 0));
  }
  const __m512i nibble_shift = _mm512_set_epi64(4, 0, 4, 0, 4, 0, 4, 0);
  __m512 acc[kTokens];
  __m256 acc_min[kTokens];
  for (int t = 0; t < kTokens; ++t) {
    acc[t] = _mm512_setzero_ps();
    acc_min[t] = _mm256_setzero_ps();
  }
  auto activations = [&](int t) { return reinterpret_cast<const BlockQ8_K*>(a + t * a_stride); };
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    if constexpr (kTokens == 1) prefetch_ahead(x + b);
    // [d, dmin] (adjacent halves) as floats in one conversion.
    const __m128 x_d_dmin = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(load_u32(
        reinterpret_cast<const uint8_t*>(&x[b].d)))));
    // Bytes [sc0 .. sc7, mn0 .. mn7] in every 128-bit lane.
    const __m512i scale_bytes = _mm512_broadcast_i32x4(unpack_k4_scales_vector(x[b].scales));
    const __m256i mins = _mm512_castsi512_si256(_mm512_shuffle_epi8(scale_bytes, min_index));
    const __m512i scales = _mm512_shuffle_epi8(scale_bytes, scale_index);
    const __m512i packed_0 = load_512(x[b].qs);
    const __m512i packed_1 = load_512(x[b].qs + 64);
    __m512i q[4];
    for (int step = 0; step < 4; ++step) {
      const __m512i groups = _mm512_permutex2var_epi64(packed_0, step_index[step], packed_1);
      q[step] = _mm512_and_si512(_mm512_srlv_epi64(groups, nibble_shift), low_nibble);
    }
    for (int t = 0; t < kTokens; ++t) {
      const BlockQ8_K& y = activations(t)[b];
      const __m128 d_dmin = _mm_mul_ps(_mm_set1_ps(y.d), x_d_dmin);  // [y.d * d, y.d * dmin]
      const __m256i min_products = _mm256_madd_epi16(load_256(y.bsums), mins);
      acc_min[t] = _mm256_fmadd_ps(_mm256_permutexvar_ps(_mm256_set1_epi32(1), _mm256_castps128_ps256(d_dmin)),
                                   _mm256_cvtepi32_ps(min_products), acc_min[t]);
      __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[0], load_512(y.qs));
      sums = _mm512_dpbusd_epi32(sums, q[1], load_512(y.qs + 64));
      sums = _mm512_dpbusd_epi32(sums, q[2], load_512(y.qs + 128));
      sums = _mm512_dpbusd_epi32(sums, q[3], load_512(y.qs + 192));
      acc[t] = _mm512_fmadd_ps(_mm512_broadcastss_ps(d_dmin), _mm512_cvtepi32_ps(_mm512_madd_epi16(sums, scales)),
                               acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) out[t * out_stride] = _mm512_reduce_add_ps(acc[t]) - hsum_ps(acc_min[t]);
}

template <int kTokens>
void q5_K_row(int64_t n, const BlockQ5_K* x, const uint8_t* a, size_t a_stride, float* out, int64_t out_stride) {
  const __m512i low_nibble = _mm512_set1_epi8(0x0f);
  const __m512i sixteen = _mm512_set1_epi8(16);
  const __m256i min_index = _mm256_setr_epi16(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);
  __m512 acc[kTokens];
  __m256 acc_min[kTokens];
  for (int t = 0; t < kTokens; ++t) {
    acc[t] = _mm512_setzero_ps();
    acc_min[t] = _mm256_setzero_ps();
  }
  auto activations = [&](int t) { return reinterpret_cast<const BlockQ8_K*>(a + t * a_stride); };
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    if constexpr (kTokens == 1) prefetch_ahead(x + b);
    const float x_d = half_to_float(x[b].d);
    const float x_dmin = half_to_float(x[b].dmin);
    const __m256i scales_16 = _mm256_cvtepu8_epi16(unpack_k4_scales(x[b].scales));
    const __m512i scales_512 = _mm512_castsi256_si512(scales_16);  // upper half unused by the indices
    const __m256i mins = _mm256_permutexvar_epi16(min_index, scales_16);
    __m512i isum[kTokens];
    for (int t = 0; t < kTokens; ++t) {
      const BlockQ8_K& y = activations(t)[b];
      const __m256i min_products = _mm256_madd_epi16(load_256(y.bsums), mins);
      acc_min[t] = _mm256_fmadd_ps(_mm256_set1_ps(y.d * x_dmin), _mm256_cvtepi32_ps(min_products), acc_min[t]);
      isum[t] = _mm512_setzero_si512();
    }
    // Sub-block s takes its fifth bits from bit s of the qh bytes. Bytes 0..31 of a step
    // are sub-blocks 4p (low nibbles) / 4p + 1 (high), bytes 32..63 are 4p + 2 / 4p + 3:
    // with qh >> 2 in the upper half, both halves test bits 4p and 4p + 1.
    const __m256i qh_256 = load_256(x[b].qh);
    const __m512i qh = combine_256(qh_256, _mm256_srli_epi16(qh_256, 2));
    for (int p = 0; p < 2; ++p) {
      const __m512i packed = load_512(x[b].qs + 64 * p);
      const __m512i low_nibbles = _mm512_and_si512(packed, low_nibble);
      const __m512i high_nibbles = _mm512_and_si512(_mm512_srli_epi16(packed, 4), low_nibble);
      const __mmask64 low_bit4 = _mm512_test_epi8_mask(qh, _mm512_set1_epi8(static_cast<char>(1 << (4 * p))));
      const __mmask64 high_bit4 = _mm512_test_epi8_mask(qh, _mm512_set1_epi8(static_cast<char>(2 << (4 * p))));
      const __m512i low = _mm512_mask_add_epi8(low_nibbles, low_bit4, low_nibbles, sixteen);
      const __m512i high = _mm512_mask_add_epi8(high_nibbles, high_bit4, high_nibbles, sixteen);
      const __m512i low_scales = _mm512_permutexvar_epi16(split_index(4 * p, 4 * p + 2), scales_512);
      const __m512i high_scales = _mm512_permutexvar_epi16(split_index(4 * p + 1, 4 * p + 3), scales_512);
      for (int t = 0; t < kTokens; ++t) {
        const BlockQ8_K& y = activations(t)[b];
        const __m512i y_0 = load_512(y.qs + 128 * p);
        const __m512i y_1 = load_512(y.qs + 128 * p + 64);
        const __m512i y_low = _mm512_shuffle_i64x2(y_0, y_1, _MM_SHUFFLE(1, 0, 1, 0));
        const __m512i y_high = _mm512_shuffle_i64x2(y_0, y_1, _MM_SHUFFLE(3, 2, 3, 2));
        isum[t] = _mm512_dpwssd_epi32(isum[t], _mm512_maddubs_epi16(low, y_low), low_scales);
        isum[t] = _mm512_dpwssd_epi32(isum[t], _mm512_maddubs_epi16(high, y_high), high_scales);
      }
    }
    for (int t = 0; t < kTokens; ++t) {
      acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(activations(t)[b].d * x_d), _mm512_cvtepi32_ps(isum[t]), acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) out[t * out_stride] = _mm512_reduce_add_ps(acc[t]) - hsum_ps(acc_min[t]);
}

template <int kTokens>
void q6_K_row(int64_t n, const BlockQ6_K* x, const uint8_t* a, size_t a_stride, float* out, int64_t out_stride) {
  const __m512i low_nibble = _mm512_set1_epi8(0x0f);
  const __m512i bits_4_5 = _mm512_set1_epi8(0x30);
  // int16 pair-sum lane l of a 64-quant step covers group (16 quants) l / 8 of that step.
  __m512i group_index[4];
  for (int s = 0; s < 4; ++s) {
    group_index[s] = _mm512_add_epi16(
        _mm512_set1_epi16(static_cast<int16_t>(4 * s)),
        _mm512_srli_epi16(_mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14,
                                           13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                          3));
  }
  __m512 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
  auto activations = [&](int t) { return reinterpret_cast<const BlockQ8_K*>(a + t * a_stride); };
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    if constexpr (kTokens == 1) prefetch_ahead(x + b);
    const float x_d = half_to_float(x[b].d);
    const __m256i scales_16 = _mm256_cvtepi8_epi16(load_128(x[b].scales));
    const __m512i scales_512 = _mm512_castsi256_si512(scales_16);  // upper half unused by the indices
    __m512i isum[kTokens];
    for (int t = 0; t < kTokens; ++t) isum[t] = _mm512_setzero_si512();
    for (int half = 0; half < 2; ++half) {
      // Bytes 0..31 of ql hold elements 0..31 (low nibble) and 64..95 (high), bytes
      // 32..63 elements 32..63 and 96..127; qh bits 2k, 2k+1 go with element 32k + l.
      // With qh in bytes 0..31 and qh >> 2 in bytes 32..63, the low-nibble step needs
      // bits 0-1 of each and the high-nibble step bits 4-5.
      const __m512i ql = load_512(x[b].ql + 64 * half);
      const __m256i qh_256 = load_256(x[b].qh + 32 * half);
      const __m512i qh = combine_256(qh_256, _mm256_srli_epi16(qh_256, 2));
      const __m512i q_first = _mm512_or_si512(_mm512_and_si512(ql, low_nibble),
                                              _mm512_and_si512(_mm512_slli_epi16(qh, 4), bits_4_5));
      const __m512i q_second = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low_nibble),
                                               _mm512_and_si512(qh, bits_4_5));
      const __m512i scales_first = _mm512_permutexvar_epi16(group_index[2 * half], scales_512);
      const __m512i scales_second = _mm512_permutexvar_epi16(group_index[2 * half + 1], scales_512);
      for (int t = 0; t < kTokens; ++t) {
        const BlockQ8_K& y = activations(t)[b];
        const __m512i pairs_first = _mm512_maddubs_epi16(q_first, load_512(y.qs + 128 * half));
        const __m512i pairs_second = _mm512_maddubs_epi16(q_second, load_512(y.qs + 128 * half + 64));
        isum[t] = _mm512_dpwssd_epi32(isum[t], pairs_first, scales_first);
        isum[t] = _mm512_dpwssd_epi32(isum[t], pairs_second, scales_second);
      }
    }
    for (int t = 0; t < kTokens; ++t) {
      const BlockQ8_K& y = activations(t)[b];
      // The -32 of every level: 32 * sum_j scale_j * bsums[j].
      const __m256i offset_products = _mm256_madd_epi16(load_256(y.bsums), scales_16);
      isum[t] = _mm512_sub_epi32(isum[t], _mm512_zextsi256_si512(_mm256_slli_epi32(offset_products, 5)));
      acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(y.d * x_d), _mm512_cvtepi32_ps(isum[t]), acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) out[t * out_stride] = _mm512_reduce_add_ps(acc[t]);
}

template <typename Block, int kTokens>
void row_kernel(int64_t n, const Block* x, const uint8_t* a, size_t a_stride, float* out, int64_t out_stride) {
  if constexpr (std::is_same_v<Block, BlockQ4_K>) {
    q4_K_row<kTokens>(n, x, a, a_stride, out, out_stride);
  } else if constexpr (std::is_same_v<Block, BlockQ5_K>) {
    q5_K_row<kTokens>(n, x, a, a_stride, out, out_stride);
  } else {
    q6_K_row<kTokens>(n, x, a, a_stride, out, out_stride);
  }
}

// Activation rows as row_kernel<Block> reads them: Q4_K wants permute_for_q4_K's layout,
// written here into a buffer (kStageTokens rows at a time); the others read the rows as
// they are.
constexpr int kStageTokens = kTokenTile;

template <typename Block>
class StagedActivations {
 public:
  StagedActivations(int64_t n, const uint8_t* a, size_t a_stride) : n_blocks_(n / kSuperBlockSize), a_(a), a_stride_(a_stride) {
    if constexpr (std::is_same_v<Block, BlockQ4_K>) {
      buffer_ = static_cast<BlockQ8_K*>(std::malloc(sizeof(BlockQ8_K) * kStageTokens * n_blocks_));
    }
  }
  ~StagedActivations() { std::free(buffer_); }
  StagedActivations(const StagedActivations&) = delete;
  StagedActivations& operator=(const StagedActivations&) = delete;

  // Rows t .. t + count - 1 (count <= kStageTokens), readable until the next call.
  const uint8_t* rows(int64_t t, int count) {
    if constexpr (!std::is_same_v<Block, BlockQ4_K>) {
      (void)count;
      return a_ + t * a_stride_;
    } else {
      for (int i = 0; i < count; ++i) {
        permute_for_q4_K(reinterpret_cast<const BlockQ8_K*>(a_ + (t + i) * a_stride_), buffer_ + i * n_blocks_,
                         n_blocks_);
      }
      return reinterpret_cast<const uint8_t*>(buffer_);
    }
  }
  size_t stride() const {
    return std::is_same_v<Block, BlockQ4_K> ? sizeof(BlockQ8_K) * n_blocks_ : a_stride_;
  }

 private:
  int64_t n_blocks_;
  const uint8_t* a_;
  size_t a_stride_;
  BlockQ8_K* buffer_ = nullptr;
};

template <typename Block>
float dot_row(int64_t n, const void* w, const void* a) {
  StagedActivations<Block> staged(n, static_cast<const uint8_t*>(a), 0);
  float result;
  row_kernel<Block, 1>(n, static_cast<const Block*>(w), staged.rows(0, 1), 0, &result, 0);
  return result;
}

// One weight row against n_a_rows activation rows, kTokenTile at a time.
template <typename Block>
void dot_rows(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows, float* out,
              int64_t out_stride) {
  const auto* x = static_cast<const Block*>(w);
  StagedActivations<Block> staged(n, static_cast<const uint8_t*>(a), a_stride);
  int64_t t = 0;
  for (; t + kTokenTile <= n_a_rows; t += kTokenTile) {
    row_kernel<Block, kTokenTile>(n, x, staged.rows(t, kTokenTile), staged.stride(), out + t * out_stride,
                                  out_stride);
  }
  for (; t < n_a_rows; ++t) row_kernel<Block, 1>(n, x, staged.rows(t, 1), 0, out + t * out_stride, 0);
}

// Weight rows in cache panels (x86_helpers.h): for each panel, every tile of kTokenTile
// activation rows against each row of the panel.
template <typename Block>
void dot_matrix(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a, size_t a_stride,
                int64_t n_a_rows, float* out, int64_t out_stride) {
  const auto* weights = static_cast<const uint8_t*>(w);
  StagedActivations<Block> staged(n, static_cast<const uint8_t*>(a), a_stride);
  auto row = [&](int64_t r) { return reinterpret_cast<const Block*>(weights + r * w_stride); };
  const int64_t panel = panel_rows(w_stride, 1);
  for (int64_t r0 = 0; r0 < n_w_rows; r0 += panel) {
    const int64_t r1 = r0 + panel < n_w_rows ? r0 + panel : n_w_rows;
    int64_t t = 0;
    for (; t + kTokenTile <= n_a_rows; t += kTokenTile) {
      const uint8_t* tile = staged.rows(t, kTokenTile);
      for (int64_t r = r0; r < r1; ++r) {
        row_kernel<Block, kTokenTile>(n, row(r), tile, staged.stride(), out + t * out_stride + r, out_stride);
      }
    }
    for (; t < n_a_rows; ++t) {
      const uint8_t* single = staged.rows(t, 1);
      for (int64_t r = r0; r < r1; ++r) row_kernel<Block, 1>(n, row(r), single, 0, out + t * out_stride + r, 0);
    }
  }
}

}  // namespace

float vec_dot_q4_K_q8_K(int64_t n, const void* w, const void* a) { return dot_row<BlockQ4_K>(n, w, a); }
float vec_dot_q5_K_q8_K(int64_t n, const void* w, const void* a) { return dot_row<BlockQ5_K>(n, w, a); }
float vec_dot_q6_K_q8_K(int64_t n, const void* w, const void* a) { return dot_row<BlockQ6_K>(n, w, a); }

void vec_dot_rows_q4_K_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows, float* out,
                            int64_t out_stride) {
  dot_rows<BlockQ4_K>(n, w, a, a_stride, n_a_rows, out, out_stride);
}
void vec_dot_rows_q5_K_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows, float* out,
                            int64_t out_stride) {
  dot_rows<BlockQ5_K>(n, w, a, a_stride, n_a_rows, out, out_stride);
}
void vec_dot_rows_q6_K_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows, float* out,
                            int64_t out_stride) {
  dot_rows<BlockQ6_K>(n, w, a, a_stride, n_a_rows, out, out_stride);
}

void vec_dot_matrix_q4_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride) {
  dot_matrix<BlockQ4_K>(n, w, w_stride, n_w_rows, a, a_stride, n_a_rows, out, out_stride);
}
void vec_dot_matrix_q5_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride) {
  dot_matrix<BlockQ5_K>(n, w, w_stride, n_w_rows, a, a_stride, n_a_rows, out, out_stride);
}
void vec_dot_matrix_q6_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride) {
  dot_matrix<BlockQ6_K>(n, w, w_stride, n_w_rows, a, a_stride, n_a_rows, out, out_stride);
}

}  // namespace tokenmill::quant::avx512
