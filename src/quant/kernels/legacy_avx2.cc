// AVX2 dot products of the 32-element legacy weight formats in the file's row layout:
// Q4_0, Q5_0, Q8_0 with a Q8_0 activation row, Q4_1 and Q5_1 with a Q8_1 row (whose
// s = d_a * sum(a) pays for the weight's minimum m: dot = d * d_a * sum(q * a) + m * s).
//
// Every weight block is first unpacked to 32 signed int8 levels in element order, so one
// block kernel serves all the formats; the per-format part is only `unpack`. The integer
// dot product of a block is exact. For the _0 formats each block's integer then takes
// the float step of every legacy kernel (legacy_panels_avx2.cc, the AVX-512 kernels):
//   acc = fma(float(isum_b), d_b * d_token,b, acc)          block by block,
// so a result has the same bits as the panel kernels give for the same row and token.
// The _1 formats accumulate each block's scale product in 8 lanes (a different order
// from the scalar reference: they agree to rounding, not bit for bit).

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "quant/blocks.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant::avx2 {

namespace {

// One weight block as 32 signed levels (element order) and its scale.
struct UnpackedBlock {
  __m256i levels;
  float d;
  float m = 0.0f;  // the _1 formats' minimum
};

// The activation format each weight format is dotted with.
template <typename Block>
struct ActivationOf {
  using type = BlockQ8_0;
  static constexpr bool kHasMin = false;
};
template <>
struct ActivationOf<BlockQ4_1> {
  using type = BlockQ8_1;
  static constexpr bool kHasMin = true;
};
template <>
struct ActivationOf<BlockQ5_1> {
  using type = BlockQ8_1;
  static constexpr bool kHasMin = true;
};

UnpackedBlock unpack(const BlockQ8_0& block) { return {load_256(block.qs), half_to_float(block.d)}; }

UnpackedBlock unpack(const BlockQ4_0& block) {
  const __m256i levels = _mm256_sub_epi8(unpack_legacy_nibbles(block.qs), _mm256_set1_epi8(8));
  return {levels, half_to_float(block.d)};
}

// 0xff in byte i where bit i of the 32-bit qh is set (Q5_0, Q5_1). Byte i of `spread` is
// byte i / 8 of qh, so testing bit i % 8 of it tests bit i of qh.
__m256i fifth_bit_bytes(const uint8_t* qh) {
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(load_u32(qh))),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
  const __m256i bit_of_byte = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit_of_byte), bit_of_byte);
}

UnpackedBlock unpack(const BlockQ5_0& block) {
  const __m256i has_bit4 = fifth_bit_bytes(block.qh);
  // level = q - 16. With bit 4 set that is the low nibble; without, it is the nibble
  // minus 16, which as an int8 is the nibble with the top four bits set (0xF0).
  const __m256i levels = _mm256_or_si256(unpack_legacy_nibbles(block.qs),
                                         _mm256_andnot_si256(has_bit4, _mm256_set1_epi8(static_cast<char>(0xf0))));
  return {levels, half_to_float(block.d)};
}

// Q4_1: the nibble itself (0..15) is the level the scale multiplies.
UnpackedBlock unpack(const BlockQ4_1& block) {
  return {unpack_legacy_nibbles(block.qs), half_to_float(block.d), half_to_float(block.m)};
}

// Q5_1: nibble + 16 where qh has the element's bit (0..31).
UnpackedBlock unpack(const BlockQ5_1& block) {
  const __m256i has_bit4 = fifth_bit_bytes(block.qh);
  const __m256i levels =
      _mm256_or_si256(unpack_legacy_nibbles(block.qs), _mm256_and_si256(has_bit4, _mm256_set1_epi8(0x10)));
  return {levels, half_to_float(block.d), half_to_float(block.m)};
}

// out[t * out_stride] = dot(w, activation row t) for kTokens activation rows at once: each
// weight block is unpacked once and dotted with kTokens activation blocks.
template <typename Block, int kTokens>
void dot_tile(int64_t n_blocks, const Block* w, const uint8_t* a, size_t a_stride, float* out,
              int64_t out_stride) {
  using Activation = typename ActivationOf<Block>::type;
  if constexpr (!ActivationOf<Block>::kHasMin) {
    float acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = 0.0f;
    for (int64_t b = 0; b < n_blocks; ++b) {
      const UnpackedBlock weights = unpack(w[b]);
      for (int t = 0; t < kTokens; ++t) {
        const Activation& activation = reinterpret_cast<const Activation*>(a + t * a_stride)[b];
        const int32_t isum = hsum_epi32(dot_i8_avx2(weights.levels, load_256(activation.qs)));
        acc[t] = __builtin_fmaf(static_cast<float>(isum), weights.d * half_to_float(activation.d), acc[t]);
      }
    }
    for (int t = 0; t < kTokens; ++t) out[t * out_stride] = acc[t];
  } else {
    __m256 acc[kTokens];
    float min_sum[kTokens];
    for (int t = 0; t < kTokens; ++t) {
      acc[t] = _mm256_setzero_ps();
      min_sum[t] = 0.0f;
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
      const UnpackedBlock weights = unpack(w[b]);
      for (int t = 0; t < kTokens; ++t) {
        const Activation& activation = reinterpret_cast<const Activation*>(a + t * a_stride)[b];
        const __m256i isum = dot_i8_avx2(weights.levels, load_256(activation.qs));
        const __m256 d = _mm256_set1_ps(weights.d * half_to_float(activation.d));
        acc[t] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), acc[t]);
        min_sum[t] += weights.m * half_to_float(activation.s);
      }
    }
    for (int t = 0; t < kTokens; ++t) out[t * out_stride] = hsum_ps(acc[t]) + min_sum[t];
  }
}

// Activation rows in tiles of 4 (4 accumulators fit the 16 ymm registers with room for
// the weight levels), the remainder one by one.
constexpr int kTokenTile = 4;

template <typename Block>
void dot_rows(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows, float* out,
              int64_t out_stride) {
  const auto* weights = static_cast<const Block*>(w);
  const auto* activations = static_cast<const uint8_t*>(a);
  const int64_t n_blocks = n / kLegacyBlockSize;
  int64_t t = 0;
  for (; t + kTokenTile <= n_a_rows; t += kTokenTile) {
    dot_tile<Block, kTokenTile>(n_blocks, weights, activations + t * a_stride, a_stride, out + t * out_stride,
                                out_stride);
  }
  for (; t < n_a_rows; ++t) {
    dot_tile<Block, 1>(n_blocks, weights, activations + t * a_stride, a_stride, out + t * out_stride, out_stride);
  }
}

}  // namespace

TM_DOT_ROWS_ENTRY(vec_dot_rows_q4_0_q8_0, dot_rows<BlockQ4_0>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_q4_1_q8_1, dot_rows<BlockQ4_1>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_q5_0_q8_0, dot_rows<BlockQ5_0>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_q5_1_q8_1, dot_rows<BlockQ5_1>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_q8_0_q8_0, dot_rows<BlockQ8_0>)

}  // namespace tokenmill::quant::avx2
