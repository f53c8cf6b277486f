// AVX2 (+FMA, F16C) attention for one query token and one group of query heads
// (attention_kernels.h), for CPUs without AVX-512: the AVX-512 kernel's steps on vectors
// of 8 floats.
//
//   scores:  for each key j, every head's q·k_j: 8 dims per FMA, eight (head, key)
//            chains in flight, in two passes that are the halves of the AVX-512 kernel's
//            16 lanes, then its fixed horizontal sum
//   softmax: vectorized (exp to ~1 ulp, double sums in a fixed order), probabilities
//            rounded to F16
//   values:  out[h] += p[h][j] * v_j for j in order, 16 dims x up to 4 heads per pass,
//            16 keys at a time
// Rows are read through a row format (F16Rows, Q8Rows) giving 8 floats at a time; the
// arithmetic after that is the same for both. Every sum is the AVX-512 kernel's, in its
// order (16-lane q·k accumulators as two 8-lane passes, 16 double lanes in the softmax),
// so both kernels give the same bits.
//
// Only intrinsics and C library calls here: this file is compiled with -mavx2, and an
// inline function shared with other files could be merged into theirs.
#include <immintrin.h>
#include <math.h>

#include <cstdint>
#include <cstring>

#include "ops/cpu/attention_kernels.h"

namespace tokenmill::ops::cpu {

namespace {

constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

__m256 load_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
__m256 round_f16(__m256 v) { return _mm256_cvtph_ps(_mm256_cvtps_ph(v, kRound)); }

float reduce_8(__m256 v) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// Rows of F16 values: values d .. d + 7.
struct F16Rows {
  static int32_t bytes(int32_t n) { return 2 * n; }
  static int32_t last_byte(int32_t d) { return 2 * d + 1; }  // of value d
  static __m256 load(const uint8_t* row, int32_t d) { return load_f16(reinterpret_cast<const uint16_t*>(row) + d); }
  // The line holding step d's bytes, every fourth step (rows of head_dim % 32 == 0
  // values are line-aligned).
  static void prefetch_step(const uint8_t* row, int32_t d) {
    if (d % 32 == 0) _mm_prefetch(reinterpret_cast<const char*>(row + 2 * d), _MM_HINT_T0);
  }
};

// Rows of Q8_0 blocks (kv_storage.h): values d .. d + 7, each its code times its block's
// scale (exact in float, as the reference computes it).
struct Q8Rows {
  static int32_t bytes(int32_t n) { return n / kKvQ8Block * kKvQ8BlockBytes; }
  static int32_t last_byte(int32_t d) { return bytes(d / kKvQ8Block * kKvQ8Block) + 2 + d % kKvQ8Block; }  // of value d
  static __m256 load(const uint8_t* row, int32_t d) {
    const uint8_t* block = row + (d / kKvQ8Block) * kKvQ8BlockBytes;
    uint16_t scale_bits;
    std::memcpy(&scale_bits, block, sizeof(scale_bits));
    const __m256 scale = _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(scale_bits)));
    const __m128i codes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + d % kKvQ8Block));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(codes)), scale);
  }
  // The line holding step d's last byte, every step (once per block, with the block's
  // last step, came too late for the next block's first reads).
  static void prefetch_step(const uint8_t* row, int32_t d) {
    _mm_prefetch(reinterpret_cast<const char*>(row + last_byte(d + 7)), _MM_HINT_T0);
  }
};

// Keys and values sit in 16-position blocks scattered over the cache: rows kPrefetchRows
// ahead of the one being read are prefetched by hand, along the item's stream of rows
// (its keys, then its values), a line at a time with the arithmetic: a burst of a whole
// row or block overflows the miss buffers (attention_avx512.cc).
constexpr int32_t kPrefetchRows = 16;

// Row r of the item's stream (key r, then value r - n_keys), or `fallback` past its end.
const uint8_t* stream_row(const HeadGroupAttention& a, int32_t r, const uint8_t* fallback) {
  if (r < a.n_keys) return a.keys[r];
  return r < 2 * a.n_keys ? a.values[r - a.n_keys] : fallback;
}

// Raw q·k of kHeads heads x kKeys keys from key j0: scores[h * n_keys + j0 + k].
// kHeads * kKeys is 8 (kHeads for the tails).
template <typename Rows, int kHeads, int kKeys>
void score_tile(const HeadGroupAttention& a, const float* q16, int32_t j0) {
  constexpr int kChains = kHeads * kKeys;
  const uint8_t* ahead[kKeys];  // past the stream's end, the tile's own (cached) rows
  for (int j = 0; j < kKeys; ++j) ahead[j] = stream_row(a, j0 + j + kPrefetchRows, a.keys[j0 + j]);
  // The AVX-512 kernel's 16 lanes in two passes over the tile's rows (the second reads
  // them from L1): lane l of the first sums dims l, l + 16, l + 32, ... in order, lane l
  // of the second dims 8 + l, 24 + l, ...; then its horizontal sum, lo + hi first.
  __m256 low[kChains];
  __m256 acc[kChains];
  for (int half = 0; half < 2; ++half) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_setzero_ps();
    for (int32_t d = 8 * half; d < a.head_dim; d += 16) {
      for (int j = 0; j < kKeys; ++j) Rows::prefetch_step(ahead[j], d);
      __m256 k[kKeys];
      for (int j = 0; j < kKeys; ++j) k[j] = Rows::load(a.keys[j0 + j], d);
      for (int h = 0; h < kHeads; ++h) {
        const __m256 q = _mm256_loadu_ps(q16 + static_cast<int64_t>(h) * a.head_dim + d);
        for (int j = 0; j < kKeys; ++j) acc[h * kKeys + j] = _mm256_fmadd_ps(q, k[j], acc[h * kKeys + j]);
      }
    }
    if (half == 0) {
      for (int c = 0; c < kChains; ++c) low[c] = acc[c];
    }
  }
  for (int h = 0; h < kHeads; ++h) {
    for (int j = 0; j < kKeys; ++j) {
      const int c = h * kKeys + j;
      a.scratch_scores[static_cast<int64_t>(h) * a.n_keys + j0 + j] = reduce_8(_mm256_add_ps(low[c], acc[c]));
    }
  }
}

template <typename Rows, int kHeads>
void score_heads(const HeadGroupAttention& a, const float* q16) {
  constexpr int kKeys = 8 / kHeads;
  int32_t j = 0;
  for (; j + kKeys <= a.n_keys; j += kKeys) score_tile<Rows, kHeads, kKeys>(a, q16, j);
  for (; j < a.n_keys; ++j) score_tile<Rows, kHeads, 1>(a, q16, j);
}

// Values in blocks of kValueKeys keys: a block's rows come from memory once, with the
// first 16-dim pass, and stay in L1 for the others.
constexpr int32_t kValueKeys = 16;
static_assert(kValueKeys == kPrefetchRows, "the score pass prefetches exactly the first block of values");

// out[h][d0 .. d0 + 16) += sum_j p[h][j] * v_j for keys j0 .. j1 - 1 in order; `first`:
// out starts at zero. Each output element is one chain of FMAs over j = 0, 1, ...
template <typename Rows, int kHeads>
void value_tile(const HeadGroupAttention& a, const float* probabilities, float* out, int32_t d0, int32_t j0,
                int32_t j1, bool first) {
  __m256 acc[kHeads][2];
  for (int h = 0; h < kHeads; ++h) {
    for (int c = 0; c < 2; ++c) {
      acc[h][c] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(out + static_cast<int64_t>(h) * a.head_dim + d0 + 8 * c);
    }
  }
  // The line holding this chunk's last byte of the value kValueKeys ahead, read by the
  // next block's pass over the same chunk.
  const int32_t last_byte = Rows::last_byte(d0 + 15);
  for (int32_t j = j0; j < j1; ++j) {
    if (j + kValueKeys < a.n_keys) _mm_prefetch(reinterpret_cast<const char*>(a.values[j + kValueKeys] + last_byte), _MM_HINT_T0);
    const __m256 v[2] = {Rows::load(a.values[j], d0), Rows::load(a.values[j], d0 + 8)};
    for (int h = 0; h < kHeads; ++h) {
      const __m256 p = _mm256_set1_ps(probabilities[static_cast<int64_t>(h) * a.n_keys + j]);
      for (int c = 0; c < 2; ++c) acc[h][c] = _mm256_fmadd_ps(p, v[c], acc[h][c]);
    }
  }
  for (int h = 0; h < kHeads; ++h) {
    for (int c = 0; c < 2; ++c) _mm256_storeu_ps(out + static_cast<int64_t>(h) * a.head_dim + d0 + 8 * c, acc[h][c]);
  }
}

// REQUIRES: head_dim % 16 == 0 (attend_head_group_avx2's contract).
template <typename Rows, int kHeads>
void value_heads(const HeadGroupAttention& a, const float* probabilities, float* out) {
  for (int32_t j0 = 0; j0 < a.n_keys; j0 += kValueKeys) {
    const int32_t j1 = j0 + kValueKeys < a.n_keys ? j0 + kValueKeys : a.n_keys;
    for (int32_t d = 0; d < a.head_dim; d += 16) value_tile<Rows, kHeads>(a, probabilities, out, d, j0, j1, j0 == 0);
  }
}

// e^x for x <= 0, 8 lanes: x = n ln 2 + r (ln 2 in two parts, so r is exact), e^r by its
// Taylor series to r^7, times 2^n as the AVX-512 kernel's vscalefps computes it: one
// rounding, also where the result is subnormal (p * 2^(n + 64) is exact, the multiply by
// 2^-64 rounds once). Lanes below -88 give 0, as there (their probability rounds to 0 in
// F16 anyway).
__m256 exp_nonpositive(__m256 x) {
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), kRound);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i exponent = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127 + 64)), 23);
  const __m256 scaled = _mm256_mul_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(exponent)), _mm256_set1_ps(0x1p-64f));
  const __m256 live = _mm256_cmp_ps(x, _mm256_set1_ps(-88.0f), _CMP_GE_OQ);
  return _mm256_and_ps(live, scaled);
}

__m256 masked_load(const float* p, int32_t n_left) {
  const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  return _mm256_maskload_ps(p, mask);
}
void masked_store(float* p, int32_t n_left, __m256 v) {
  const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  _mm256_maskstore_ps(p, mask, v);
}

// scores (raw dots) -> F16-rounded probabilities, in place, for one head: scaled (and
// soft-capped), e^(s - max) summed in double in a fixed order (8 running sums, then in
// order), normalized and rounded to F16.
void softmax(const HeadGroupAttention& a, float* scores) {
  const int32_t n = a.n_keys;
  const __m256 scale = _mm256_set1_ps(a.scale);
  float max_score = -INFINITY;
  for (int32_t j = 0; j < n; j += 8) {
    const int32_t left = n - j;
    __m256 v = _mm256_mul_ps(masked_load(scores + j, left), scale);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, v);
    for (int i = 0; i < 8 && i < left; ++i) {
      if (a.softcap > 0.0f) lanes[i] = a.softcap * tanhf(lanes[i] / a.softcap);
      if (lanes[i] > max_score) max_score = lanes[i];
    }
    masked_store(scores + j, left, _mm256_load_ps(lanes));
  }
  const __m256 max_v = _mm256_set1_ps(max_score);
  // 16 running double sums, lane l over keys j = l (mod 16), as the AVX-512 kernel keeps
  // them (masked-off keys add +0.0, which changes no sum).
  __m256d sums[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
  for (int32_t j = 0; j < n; j += 8) {
    const int32_t left = n - j;
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 e = _mm256_and_ps(_mm256_castsi256_ps(mask),
                                   exp_nonpositive(_mm256_sub_ps(masked_load(scores + j, left), max_v)));
    masked_store(scores + j, left, e);
    __m256d* pair = sums + 2 * ((j / 8) % 2);
    pair[0] = _mm256_add_pd(pair[0], _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    pair[1] = _mm256_add_pd(pair[1], _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  alignas(32) double lanes[16];
  for (int i = 0; i < 4; ++i) _mm256_store_pd(lanes + 4 * i, sums[i]);
  double sum = 0.0;
  for (double lane : lanes) sum += lane;
  const __m256 inv_sum = _mm256_set1_ps(static_cast<float>(1.0 / sum));
  for (int32_t j = 0; j < n; j += 8) {
    const int32_t left = n - j;
    masked_store(scores + j, left, round_f16(_mm256_mul_ps(masked_load(scores + j, left), inv_sum)));
  }
}

template <typename Fn>
void for_head_chunks(int32_t n_heads, Fn&& fn) {
  int32_t h = 0;
  for (; h + 4 <= n_heads; h += 4) fn(h, 4);
  if (h + 2 <= n_heads) {
    fn(h, 2);
    h += 2;
  }
  if (h < n_heads) fn(h, 1);
}

template <typename Rows>
void attend(const HeadGroupAttention& a) {
  const int32_t hd = a.head_dim;
  for (int64_t i = 0; i < static_cast<int64_t>(a.n_heads) * hd; i += 8) {
    _mm256_storeu_ps(a.scratch_q + i, round_f16(_mm256_loadu_ps(a.q + i)));
  }
  for_head_chunks(a.n_heads, [&](int32_t h, int32_t n) {
    const float* q16 = a.scratch_q + static_cast<int64_t>(h) * hd;
    HeadGroupAttention part = a;
    part.scratch_scores = a.scratch_scores + static_cast<int64_t>(h) * a.n_keys;
    if (n == 4) score_heads<Rows, 4>(part, q16);
    if (n == 2) score_heads<Rows, 2>(part, q16);
    if (n == 1) score_heads<Rows, 1>(part, q16);
  });
  for (int32_t h = 0; h < a.n_heads; ++h) softmax(a, a.scratch_scores + static_cast<int64_t>(h) * a.n_keys);
  for_head_chunks(a.n_heads, [&](int32_t h, int32_t n) {
    const float* p = a.scratch_scores + static_cast<int64_t>(h) * a.n_keys;
    float* out = a.out + static_cast<int64_t>(h) * hd;
    if (n == 4) value_heads<Rows, 4>(a, p, out);
    if (n == 2) value_heads<Rows, 2>(a, p, out);
    if (n == 1) value_heads<Rows, 1>(a, p, out);
  });
}

}  // namespace

void attend_head_group_avx2(const HeadGroupAttention& a) {
  if (a.kv_type == KvType::kQ8_0) {
    attend<Q8Rows>(a);
  } else {
    attend<F16Rows>(a);
  }
}

}  // namespace tokenmill::ops::cpu
