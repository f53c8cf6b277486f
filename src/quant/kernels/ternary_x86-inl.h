// The ternary formats' dot products against Q8_K (TQ1_0, TQ2_0) for x86, written once over
// 256-bit vectors: included after iq4_x86-inl.h (whose iq4_half and kRowTile it uses) in
// the same anonymous namespace, so each copy has internal linkage; the including file
// expands TM_TERNARY_ROW_ENTRIES after that namespace, in its own. The including file
// also defines
//
//   struct TernaryDot {
//     // acc + the products t[i] * q[i] (t: trits, 0 .. 2; q signed), in whatever lanes
//     // the set accumulates eight vectors of them in without overflow
//     static __m256i add(__m256i acc, __m256i t, __m256i q);
//     // those lanes as eight int32 partial sums
//     static __m256i finish(__m256i acc);
//   };
//
// The trits t (0, 1, 2; the weight is t - 1) are the unsigned operand against the signed
// activations, and the -1's share comes off as the block's activation total (Q8_K's
// sums of 16): each block's integer is exact, then the reference's float step,
// sum += float(isum) * (d_w * d_a) (quants_ternary.cc), so every set gives its bits.
//
// TQ1_0's bytes hold 5 (qh: 4) trits as a base-3 fraction: trit k of byte b is
// ((b * 3^k mod 256) * 3) >> 8: 0 where b * 3^k mod 256 is below 86, 1 below 171, else 2;
// the powers are taken by byte adds (which wrap mod 256).

// The block's 16 activation sums of 16, as int32 pairs (their total is the lanes' total).
inline __m256i q8k_block_sums(const BlockQ8_K& y) {
  return _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums)), _mm256_set1_epi16(1));
}

// Each byte m: (m * 3) >> 8.
inline __m256i top_trit(__m256i m) {
  const __m256i at_least_1 = _mm256_cmpeq_epi8(_mm256_max_epu8(m, _mm256_set1_epi8(86)), m);
  const __m256i at_least_2 = _mm256_cmpeq_epi8(_mm256_max_epu8(m, _mm256_set1_epi8(static_cast<char>(171))), m);
  return _mm256_sub_epi8(_mm256_sub_epi8(_mm256_setzero_si256(), at_least_1), at_least_2);
}

inline __m256i times3(__m256i m) { return _mm256_add_epi8(m, _mm256_add_epi8(m, m)); }

// The 256 trits of a TQ1_0 block in weight order, 32 per vector.
inline void tq1_0_trits8(const BlockTQ1_0& x, __m256i t[8]) {
  __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs));
  for (int k = 0; k < 5; ++k, m = times3(m)) t[k] = top_trit(m);  // weights 32k .. 32k + 31
  // qs[32 .. 47], trit k at weights 160 + 16k + j: two trits a vector.
  const __m128i tail = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qs + 32));
  __m256i pair = _mm256_setr_m128i(tail, _mm256_castsi256_si128(times3(_mm256_castsi128_si256(tail))));
  t[5] = top_trit(pair);
  pair = times3(times3(pair));
  t[6] = top_trit(pair);
  // Trit 4 of qs[32 .. 47], then qh's 4 trits of 4 bytes: weight 240 + 4k + j is trit k
  // of qh[j], so dword k of the vector is qh times 3^k.
  const __m128i fifth = _mm256_castsi256_si128(times3(times3(pair)));
  uint32_t qh;
  std::memcpy(&qh, x.qh, sizeof qh);
  const __m128i h1 = _mm_set1_epi32(static_cast<int>(qh));
  const __m128i h3 = _mm_add_epi8(h1, _mm_add_epi8(h1, h1));
  const __m128i h9 = _mm_add_epi8(h3, _mm_add_epi8(h3, h3));
  const __m128i h27 = _mm_add_epi8(h9, _mm_add_epi8(h9, h9));
  const __m128i high = _mm_blend_epi32(_mm_blend_epi32(h1, h3, 0b0010), _mm_blend_epi32(h9, h27, 0b1000), 0b1100);
  t[7] = top_trit(_mm256_setr_m128i(fifth, high));
}

// The 256 trits of a TQ2_0 block in weight order: 32-byte half c, bits 2l of each byte.
inline void tq2_0_trits8(const BlockTQ2_0& x, __m256i t[8]) {
  for (int c = 0; c < 2; ++c) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + 32 * c));
    for (int l = 0; l < 4; ++l) t[4 * c + l] = _mm256_and_si256(_mm256_srli_epi16(q, 2 * l), _mm256_set1_epi8(3));
  }
}

inline void ternary_trits8(const BlockTQ1_0& x, __m256i t[8]) { tq1_0_trits8(x, t); }
inline void ternary_trits8(const BlockTQ2_0& x, __m256i t[8]) { tq2_0_trits8(x, t); }

// W weight rows against R activation rows; each activation vector loaded once for all W
// rows (reading the activations from L2 is what bounds a one-row loop in prefill, and
// decode keeps W rows' weights in flight). block_trits(b, t) points t[w] at the 8 trit
// vectors of row w's block b: unpacked beforehand for a whole block of tokens (prefill)
// or as the tile reaches the block (decode). out[r * out_stride + w]. The float step is
// the reference's, lane r for activation row r: sum + float(isum) * (d_w * d_a), two
// roundings.
template <typename Block, int W, int R, typename BlockTrits>
void ternary_tile(int64_t nb, const Block* const* x, const BlockTrits& block_trits, const uint8_t* a,
                  size_t a_stride, float* out, int64_t out_stride) {
  const BlockQ8_K* y[R];
  for (int r = 0; r < R; ++r) y[r] = reinterpret_cast<const BlockQ8_K*>(a + static_cast<size_t>(r) * a_stride);
  __m128 sums[W];
  for (int w = 0; w < W; ++w) sums[w] = _mm_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m256i acc[W][R];
    for (int w = 0; w < W; ++w) {
      for (int r = 0; r < R; ++r) acc[w][r] = _mm256_setzero_si256();
    }
    const __m256i* trits[W];
    block_trits(b, trits);
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      __m256i t[W];
      for (int w = 0; w < W; ++w) t[w] = _mm256_load_si256(trits[w] + i);
      for (int r = 0; r < R; ++r) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[r][b].qs + 32 * i));
        for (int w = 0; w < W; ++w) acc[w][r] = TernaryDot::add(acc[w][r], t[w], q);
      }
    }
    float row_d[R];
    __m256i block_sums[R];
    for (int r = 0; r < R; ++r) {
      row_d[r] = y[r][b].d;
      block_sums[r] = q8k_block_sums(y[r][b]);
    }
    for (int w = 0; w < W; ++w) {
      for (int r = 0; r < R; ++r) acc[w][r] = _mm256_sub_epi32(TernaryDot::finish(acc[w][r]), block_sums[r]);
      const __m128 isum = _mm_cvtepi32_ps(lane_totals<R>(acc[w]));
      const __m128 scale = _mm_mul_ps(_mm_set1_ps(iq4_half(x[w][b].d)), lanes_of<R>(row_d));
      sums[w] = _mm_add_ps(sums[w], in_register(_mm_mul_ps(isum, scale)));  // not fused
    }
  }
  for (int w = 0; w < W; ++w) {
    alignas(16) float lanes[4];
    _mm_store_ps(lanes, sums[w]);
    for (int r = 0; r < R; ++r) out[r * out_stride + w] = lanes[r];
  }
}

// Weight rows per prefill tile: W * 4 accumulators and W trit vectors fit 16 vector
// registers for W = 2 (AVX2), 32 for W = 4 (AVX-512).
#if defined(__AVX512VL__)
constexpr int kTernaryWeightRows = 4;
#else
constexpr int kTernaryWeightRows = 2;
#endif
// Activation rows from which on the weight rows' trits are unpacked once for the whole
// block of tokens (below it, in decode, each tile unpacks a block as it reaches it).
constexpr int64_t kTernaryUnpackFromRows = 8;

// The trits of the W weight rows x, each row nb * 8 vectors in scratch memory.
template <typename Block, int W>
void unpack_trit_rows(int64_t nb, const Block* const* x, const __m256i** trits) {
  auto* scratch = static_cast<__m256i*>(
      thread_scratch(ScratchSlot::kPanel, static_cast<size_t>(W * nb * 8) * sizeof(__m256i)));
  for (int w = 0; w < W; ++w) {
    for (int64_t b = 0; b < nb; ++b) ternary_trits8(x[w][b], scratch + (w * nb + b) * 8);
    trits[w] = scratch + w * nb * 8;
  }
}

// The W weight rows against n_a_rows activation rows, kRowTile at a time: their trits
// unpacked once beforehand (prefill) or per tile as it reaches each block (decode).
template <typename Block, int W>
void ternary_tiles(int64_t nb, const Block* const* x, const uint8_t* rows, size_t a_stride, int64_t n_a_rows,
                   float* out, int64_t out_stride) {
  const bool unpack_first = n_a_rows >= kTernaryUnpackFromRows;
  const __m256i* unpacked[W];
  if (unpack_first) unpack_trit_rows<Block, W>(nb, x, unpacked);
  alignas(32) __m256i block[W][8];
  for_token_tiles<kRowTile>(n_a_rows, [&](auto tokens, int64_t t) {
    constexpr int R = decltype(tokens)::value;
    const uint8_t* a = rows + static_cast<size_t>(t) * a_stride;
    if (unpack_first) {
      const auto from_scratch = [&](int64_t b, const __m256i** trits) {
        for (int w = 0; w < W; ++w) trits[w] = unpacked[w] + 8 * b;
      };
      ternary_tile<Block, W, R>(nb, x, from_scratch, a, a_stride, out + t * out_stride, out_stride);
    } else {
      const auto as_reached = [&](int64_t b, const __m256i** trits) {
        for (int w = 0; w < W; ++w) {
          ternary_trits8(x[w][b], block[w]);
          trits[w] = block[w];
        }
      };
      ternary_tile<Block, W, R>(nb, x, as_reached, a, a_stride, out + t * out_stride, out_stride);
    }
  });
}

// Weight rows against activation rows, kTernaryWeightRows at a time; in prefill the
// activations a block at a time that stays in L2 (kActivationBlockBytes).
template <typename Block>
void ternary_matrix(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a, size_t a_stride,
                    int64_t n_a_rows, float* out, int64_t out_stride) {
  const auto* weight_rows = static_cast<const uint8_t*>(w);
  const auto* rows = static_cast<const uint8_t*>(a);
  const int64_t nb = n / kSuperBlockSize;
  for_row_groups_by_token_blocks<Block, kTernaryWeightRows, kRowTile>(
      weight_rows, w_stride, n_w_rows, n_a_rows, a_stride,
      [&](const auto& x, int64_t first_row, int64_t t0, int64_t n_tokens) {
        constexpr int W = std::extent_v<std::remove_reference_t<decltype(x)>>;
        ternary_tiles<Block, W>(nb, x, rows + static_cast<size_t>(t0) * a_stride, a_stride, n_tokens,
                                out + t0 * out_stride + first_row, out_stride);
      });
}

// One weight row: a matrix of one row.
template <typename Block>
void ternary_rows(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows, float* out,
                  int64_t out_stride) {
  ternary_matrix<Block>(n, w, 0, 1, a, a_stride, n_a_rows, out, out_stride);
}

// The entries simd_kernels.h declares.
#define TM_TERNARY_ROW_ENTRIES                                                         \
  TM_DOT_ROWS_ENTRY(vec_dot_rows_tq1_0_q8_K, ternary_rows<BlockTQ1_0>)                 \
  TM_DOT_ROWS_ENTRY(vec_dot_rows_tq2_0_q8_K, ternary_rows<BlockTQ2_0>)                 \
  TM_DOT_MATRIX_ENTRY(vec_dot_matrix_tq1_0_q8_K, ternary_matrix<BlockTQ1_0>)           \
  TM_DOT_MATRIX_ENTRY(vec_dot_matrix_tq2_0_q8_K, ternary_matrix<BlockTQ2_0>)
