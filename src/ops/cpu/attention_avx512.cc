// AVX-512 attention for one query token and one group of query heads (attention_kernels.h).
// Every step reads rows through a row format (F16Rows, Q8Rows) that gives 16 floats of a
// row at a time; the arithmetic after that is the same for both.
//
//   scores:  for each key j, every head's q·k_j: 16 dims per FMA, one accumulator per
//            (head, key), sixteen (head, key) chains in flight, then the fixed horizontal
//            sum reduce_16 (reduce_4x16 reproduces it exactly for four at a time)
//   softmax: vectorized (exp to ~1 ulp, a double sum), probabilities rounded to F16
//   values:  out[h] += p[h][j] * v_j for j in order, 64 dims x up to 4 heads per pass,
//            16 keys at a time
//
// Only intrinsics and C library calls here: this file is compiled with -mavx512*, and an
// inline function shared with other files could be merged into theirs (see
// quant/kernels/x86_helpers.h).

// GCC 12's AVX-512 headers seed some intrinsics with _mm512_undefined_*(), which
// -Wuninitialized then reports at every use: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>
#include <math.h>

#include <cstdint>
#include <cstring>

#include "ops/cpu/attention_kernels.h"

namespace tokenmill::ops::cpu {

namespace {

constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

__m512 load_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }

// Row formats: load_step gives kStep / 16 vectors of a row from value d on (d a multiple
// of kStep).
//
// Rows of F16 values.
struct F16Rows {
  static constexpr int32_t kStep = 16;
  static int32_t bytes(int32_t n) { return 2 * n; }
  static void load_step(const uint8_t* row, int32_t d, __m512* out) {
    out[0] = load_f16(reinterpret_cast<const uint16_t*>(row) + d);
  }
  // The line holding step d's bytes, every other step (two steps per line; rows of
  // head_dim % 32 == 0 values are line-aligned).
  static void prefetch_step(const uint8_t* row, int32_t d) {
    if (d % 32 == 0) _mm_prefetch(reinterpret_cast<const char*>(row + 2 * d), _MM_HINT_T0);
  }
};

// Rows of Q8_0 blocks (kv_storage.h): values d .. d + 15 of the block holding d, each its
// code times the block's scale (exact in float, as the reference computes it).
struct Q8Rows {
  static constexpr int32_t kStep = kKvQ8Block;  // one block: its scale converted once
  static int32_t bytes(int32_t n) { return n / kKvQ8Block * kKvQ8BlockBytes; }
  static void load_step(const uint8_t* row, int32_t d, __m512* out) {
    const uint8_t* block = row + (d / kKvQ8Block) * kKvQ8BlockBytes;
    uint16_t scale_bits;
    std::memcpy(&scale_bits, block, sizeof(scale_bits));
    const __m512 scale = _mm512_cvtph_ps(_mm256_set1_epi16(static_cast<short>(scale_bits)));
    for (int i = 0; i < 2; ++i) {
      const __m128i codes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2 + 16 * i));
      out[i] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(codes)), scale);
    }
  }
  // The line holding the step's last byte: over a row's steps, every line it spans (34
  // bytes a step) except, for an unaligned row, perhaps the one holding its first bytes.
  static void prefetch_step(const uint8_t* row, int32_t d) {
    _mm_prefetch(reinterpret_cast<const char*>(row + bytes(d + kStep) - 1), _MM_HINT_T0);
  }
};

// Rounds 16 floats to F16 and back.
__m512 round_f16(__m512 v) { return _mm512_cvtph_ps(_mm512_cvtps_ph(v, kRound)); }

float reduce_16(__m512 v) {
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// [reduce_16(a), reduce_16(b), reduce_16(c), reduce_16(d)], the same additions.
__m128 reduce_4x16(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_f32x4(c, d, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 s4 = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(2, 0, 2, 0)),
                                  _mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512 s2 = _mm512_add_ps(s4, _mm512_permute_ps(s4, _MM_SHUFFLE(1, 0, 3, 2)));
  const __m512 s1 = _mm512_add_ps(s2, _mm512_permute_ps(s2, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm512_castps512_ps128(
      _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), s1));
}

// Keys and values sit in 16-position blocks scattered over the cache: the hardware
// prefetcher follows a block's rows but restarts at every block boundary, so rows
// kPrefetchRows ahead of the one being read are prefetched by hand. An item reads one
// stream of rows, its keys and then its values (stream_row), and the prefetches run
// ahead along that stream a few lines per step of the arithmetic: a burst of a whole
// row's or block's lines at once overflows the core's miss buffers and most of it is
// dropped (bench/attention_bench measures both). The score
// pass's last tiles thus fetch the first kPrefetchRows values; the value pass fetches
// from kValueKeys ahead (the two are equal).
constexpr int32_t kPrefetchRows = 16;

// Row r of the item's stream (key r, then value r - n_keys), or `fallback` past its end.
const uint8_t* stream_row(const HeadGroupAttention& a, int32_t r, const uint8_t* fallback) {
  if (r < a.n_keys) return a.keys[r];
  return r < 2 * a.n_keys ? a.values[r - a.n_keys] : fallback;
}

void prefetch(const uint8_t* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0); }

// Raw q·k (before the scale) of kHeads heads x kKeys keys starting at key j0:
// scores[h * n_keys + j0 + k]. kHeads * kKeys is 16 (kHeads for the tails): each key row
// loaded and converted once serves every head, each query vector every key.
template <typename Rows, int kHeads, int kKeys>
void score_tile(const HeadGroupAttention& a, const float* q16, int32_t j0) {
  constexpr int kChains = kHeads * kKeys;
  // The stream's rows kPrefetchRows ahead: each step prefetches the lines of them that
  // it reads of its own rows (past the end, its own rows again: already cached).
  const uint8_t* ahead[kKeys];
  for (int j = 0; j < kKeys; ++j) ahead[j] = stream_row(a, j0 + j + kPrefetchRows, a.keys[j0 + j]);
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_setzero_ps();
  constexpr int kVectors = Rows::kStep / 16;
  for (int32_t d = 0; d < a.head_dim; d += Rows::kStep) {
    for (int j = 0; j < kKeys; ++j) Rows::prefetch_step(ahead[j], d);
    __m512 k[kKeys][kVectors];
    for (int j = 0; j < kKeys; ++j) Rows::load_step(a.keys[j0 + j], d, k[j]);
    for (int i = 0; i < kVectors; ++i) {
      for (int h = 0; h < kHeads; ++h) {
        const __m512 q = _mm512_loadu_ps(q16 + static_cast<int64_t>(h) * a.head_dim + d + 16 * i);
        for (int j = 0; j < kKeys; ++j) acc[h * kKeys + j] = _mm512_fmadd_ps(q, k[j][i], acc[h * kKeys + j]);
      }
    }
  }
  float dots[kChains];
  if constexpr (kChains % 4 == 0) {
    for (int c = 0; c < kChains; c += 4) _mm_storeu_ps(dots + c, reduce_4x16(acc[c], acc[c + 1], acc[c + 2], acc[c + 3]));
  } else {
    for (int c = 0; c < kChains; ++c) dots[c] = reduce_16(acc[c]);
  }
  for (int h = 0; h < kHeads; ++h) {
    for (int j = 0; j < kKeys; ++j) a.scratch_scores[static_cast<int64_t>(h) * a.n_keys + j0 + j] = dots[h * kKeys + j];
  }
}

template <typename Rows, int kHeads>
void score_heads(const HeadGroupAttention& a, const float* q16) {
  constexpr int kKeys = 16 / kHeads;
  int32_t j = 0;
  for (; j + kKeys <= a.n_keys; j += kKeys) score_tile<Rows, kHeads, kKeys>(a, q16, j);
  for (; j < a.n_keys; ++j) score_tile<Rows, kHeads, 1>(a, q16, j);
}

// Values are read in blocks of kValueKeys keys: each block's rows (8 KB at head_dim 256)
// are read from memory once, by the first 64-dim chunk, and stay in L1 for the others.
// (Chunk by chunk over every key, each pass had read other cache lines of every row: four
// cold passes over the values.)
constexpr int32_t kValueKeys = 16;
static_assert(kValueKeys == kPrefetchRows, "the score pass prefetches exactly the first block of values");

// out[h][d0 .. d0 + 16 kChunks) += sum_j p[h][j] * v_j for keys j0 .. j1 - 1 in order, for
// kHeads heads; `first`: out starts at zero. Each output element is one chain of FMAs over
// j = 0, 1, ... whatever the blocks (a float stored and loaded back is unchanged).
template <typename Rows, int kHeads, int kChunks>
void value_tile(const HeadGroupAttention& a, const float* probabilities, float* out, int32_t d0, int32_t j0,
                int32_t j1, bool first) {
  __m512 acc[kHeads][kChunks];
  for (int h = 0; h < kHeads; ++h) {
    for (int c = 0; c < kChunks; ++c) {
      acc[h][c] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(out + static_cast<int64_t>(h) * a.head_dim + d0 + 16 * c);
    }
  }
  // This chunk's bytes (at most 128: two lines, or three if unaligned) of the values
  // kValueKeys ahead, read by the next block's pass over the same chunk.
  const int32_t first_byte = Rows::bytes(d0), last_byte = Rows::bytes(d0 + 16 * kChunks) - 1;
  for (int32_t j = j0; j < j1; ++j) {
    if (j + kValueKeys < a.n_keys) {
      prefetch(a.values[j + kValueKeys] + first_byte);
      prefetch(a.values[j + kValueKeys] + last_byte);
    }
    __m512 v[kChunks];
    for (int c = 0; c < kChunks; c += Rows::kStep / 16) Rows::load_step(a.values[j], d0 + 16 * c, v + c);
    for (int h = 0; h < kHeads; ++h) {
      const __m512 p = _mm512_set1_ps(probabilities[static_cast<int64_t>(h) * a.n_keys + j]);
      for (int c = 0; c < kChunks; ++c) acc[h][c] = _mm512_fmadd_ps(p, v[c], acc[h][c]);
    }
  }
  for (int h = 0; h < kHeads; ++h) {
    for (int c = 0; c < kChunks; ++c) _mm512_storeu_ps(out + static_cast<int64_t>(h) * a.head_dim + d0 + 16 * c, acc[h][c]);
  }
}

template <typename Rows, int kHeads>
void value_heads(const HeadGroupAttention& a, const float* probabilities, float* out) {
  for (int32_t j0 = 0; j0 < a.n_keys; j0 += kValueKeys) {
    const int32_t j1 = j0 + kValueKeys < a.n_keys ? j0 + kValueKeys : a.n_keys;
    const bool first = j0 == 0;
    int32_t d = 0;
    for (; d + 64 <= a.head_dim; d += 64) value_tile<Rows, kHeads, 4>(a, probabilities, out, d, j0, j1, first);
    for (; d < a.head_dim; d += Rows::kStep) {
      value_tile<Rows, kHeads, Rows::kStep / 16>(a, probabilities, out, d, j0, j1, first);
    }
  }
}

// e^x for x <= 0, 16 lanes: x = n ln 2 + r with |r| <= ln 2 / 2 (ln 2 split in two so
// that r is exact), e^r by its Taylor series to r^7 (truncation < 0.06 ulp at |r| = 0.35),
// times 2^n by vscalefps. Within about 1 ulp of expf; lanes below -88 give 0, as the
// scalar path does (their probability rounds to 0 in F16 anyway).
__m512 exp_nonpositive(__m512 x) {
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), kRound);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  const __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-88.0f), _CMP_GE_OQ);
  return _mm512_maskz_scalef_ps(live, p, n);
}

// scores (raw dots) -> F16-rounded probabilities, in place, for one head: scaled (and
// soft-capped), e^(s - max) summed in double in a fixed order (16 running sums, lane by
// lane, then added in order), normalized and rounded to F16. The order depends only on
// the number of keys, so a token's probabilities do not depend on its batch.
void softmax(const HeadGroupAttention& a, float* scores) {
  const int32_t n = a.n_keys;
  const __m512 scale = _mm512_set1_ps(a.scale);
  __m512 max_v = _mm512_set1_ps(-INFINITY);
  for (int32_t j = 0; j < n; j += 16) {
    const __mmask16 m = n - j >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - j)) - 1);
    __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, scores + j), scale);
    if (a.softcap > 0.0f) {
      alignas(64) float lanes[16];
      _mm512_store_ps(lanes, v);
      for (float& x : lanes) x = a.softcap * tanhf(x / a.softcap);
      v = _mm512_load_ps(lanes);
    }
    _mm512_mask_storeu_ps(scores + j, m, v);
    max_v = _mm512_mask_max_ps(max_v, m, max_v, v);
  }
  const __m512 max_score = _mm512_set1_ps(_mm512_reduce_max_ps(max_v));
  __m512d sum_lo = _mm512_setzero_pd(), sum_hi = _mm512_setzero_pd();
  for (int32_t j = 0; j < n; j += 16) {
    const __mmask16 m = n - j >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - j)) - 1);
    const __m512 e = _mm512_maskz_mov_ps(m, exp_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, scores + j), max_score)));
    _mm512_mask_storeu_ps(scores + j, m, e);
    sum_lo = _mm512_add_pd(sum_lo, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    sum_hi = _mm512_add_pd(sum_hi, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
  }
  alignas(64) double lanes[16];
  _mm512_store_pd(lanes, sum_lo);
  _mm512_store_pd(lanes + 8, sum_hi);
  double sum = 0.0;
  for (double lane : lanes) sum += lane;
  const __m512 inv_sum = _mm512_set1_ps(static_cast<float>(1.0 / sum));
  int32_t j = 0;
  for (; j + 16 <= n; j += 16) _mm512_storeu_ps(scores + j, round_f16(_mm512_mul_ps(_mm512_loadu_ps(scores + j), inv_sum)));
  if (j < n) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (n - j)) - 1);
    _mm512_mask_storeu_ps(scores + j, tail, round_f16(_mm512_mul_ps(_mm512_maskz_loadu_ps(tail, scores + j), inv_sum)));
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
  for (int64_t i = 0; i < static_cast<int64_t>(a.n_heads) * hd; i += 16) {
    _mm512_storeu_ps(a.scratch_q + i, round_f16(_mm512_loadu_ps(a.q + i)));
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

void attend_head_group_avx512(const HeadGroupAttention& a) {
  if (a.kv_type == KvType::kQ8_0) {
    attend<Q8Rows>(a);
  } else {
    attend<F16Rows>(a);
  }
}

}  // namespace tokenmill::ops::cpu
