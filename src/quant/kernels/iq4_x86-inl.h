// The IQ4_NL, IQ4_XS and MXFP4 dot products for x86, written once over 256-bit vectors for every
// x86 set: the including file defines, inside an anonymous namespace,
//
//   struct Iq4Dot {
//     // acc + the sums of four products u[i] * s[i] per 32-bit lane (u unsigned, s signed)
//     static __m256i dot(__m256i acc, __m256i u, __m256i s);
//   };
//
// (AVX2: vpmaddubsw + vpmaddwd; AVX-512 VNNI: vpdpbusd on 256 bits), then includes this
// body in that namespace (after <algorithm>, <cstring>, quant/blocks.h, quant/kernels_ref.h,
// quant/panel_layout.h and quant/kernels/scratch.h), so each copy has internal linkage.
//
// A group of 32 quants: its 16 bytes' low nibbles are elements 0-15 and the high nibbles
// 16-31, so one vpshufb of the 16 levels (in both 128-bit halves) gives the 32 weights in
// element order. Weights and activations are signed: |w| times a with w's sign moved onto
// a (vpsignb) is what the unsigned-by-signed products take, exact as neither is -128.
//
// The float steps are the reference's (kernels_ref.h): IQ4_NL and MXFP4 fuse block b's exact sum
// times d_w * d_a into lane b % 8, eight lanes at once here as one vector FMA, the lanes
// summed pairwise at the end; IQ4_XS fuses each super-block's exact sum into one running
// sum. So every set gives the reference's bits.
//
// Rows are taken kRowTile at a time: a group's weights are unpacked once for them all.

constexpr int kRowTile = 4;

inline __m256i iq4_levels() {
  return _mm256_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,  //
                          -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
}

// The 32 weights of the group whose quants are qs[0, 16), in element order.
inline __m256i iq4_group(const uint8_t* qs, __m256i levels) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i low4 = _mm_set1_epi8(0x0f);
  const __m256i index = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), low4), _mm_and_si128(q, low4));
  return _mm256_shuffle_epi8(levels, index);
}

// Eight int32 partial sums of w[i] * a[i] over the group (w_abs = |w|).
inline __m256i iq4_partials(__m256i w, __m256i w_abs, const int8_t* a) {
  const __m256i signed_a = _mm256_sign_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)), w);
  return Iq4Dot::dot(_mm256_setzero_si256(), w_abs, signed_a);
}

// Lane k = the total of p[k] (exact integer adds, so any order).
inline __m256i iq4_totals8(const __m256i p[8]) {
  const __m256i h01 = _mm256_hadd_epi32(p[0], p[1]);
  const __m256i h23 = _mm256_hadd_epi32(p[2], p[3]);
  const __m256i h45 = _mm256_hadd_epi32(p[4], p[5]);
  const __m256i h67 = _mm256_hadd_epi32(p[6], p[7]);
  const __m256i h0123 = _mm256_hadd_epi32(h01, h23);  // [0L 1L 2L 3L | 0H 1H 2H 3H]
  const __m256i h4567 = _mm256_hadd_epi32(h45, h67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(h0123, h4567, 0x20),
                          _mm256_permute2x128_si256(h0123, h4567, 0x31));
}

inline int32_t iq4_total(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
  return _mm_cvtsi128_si32(s);
}

inline float iq4_fma(float a, float b, float c) {
  return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
}

inline float iq4_half(uint16_t h) { return _cvtsh_ss(h); }

// The 32-element formats with a table of 16 levels and one scale per block: IQ4_NL (an
// F16 scale) and MXFP4 (a power of two, blocks.h). levels(): the table in both 128-bit
// halves; scales8(x): the first eight blocks' scales as floats.
struct Iq4NlFormat {
  using Block = BlockIQ4_NL;
  static __m256i levels() { return iq4_levels(); }
  static float scale(const Block& x) { return iq4_half(x.d); }
  static __m256 scales8(const Block* x) {
    return _mm256_cvtph_ps(_mm_setr_epi16(
        static_cast<int16_t>(x[0].d), static_cast<int16_t>(x[1].d), static_cast<int16_t>(x[2].d),
        static_cast<int16_t>(x[3].d), static_cast<int16_t>(x[4].d), static_cast<int16_t>(x[5].d),
        static_cast<int16_t>(x[6].d), static_cast<int16_t>(x[7].d)));
  }
};
// 2^(e - 128) for eight E8M0 exponents as int32 lanes: (e - 1) << 23, or the subnormal
// 0x00200000 << e for e < 2 (mxfp4_scale's bits).
inline __m256 mxfp4_scales8(__m256i e) {
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
  const __m256i small = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
  return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, small, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e)));
}

struct Mxfp4Format {
  using Block = BlockMXFP4;
  static __m256i levels() {
    return _mm256_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12,  //
                            0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
  }
  static float scale(const Block& x) { return mxfp4_scale(x.e); }
  static __m256 scales8(const Block* x) {
    return mxfp4_scales8(_mm256_setr_epi32(x[0].e, x[1].e, x[2].e, x[3].e, x[4].e, x[5].e, x[6].e, x[7].e));
  }
};

// Blocks first .. nb - 1 of one weight row (fewer than 8, after a multiple of 8; tail[i] is
// block first + i) against one token, each fused into its lane l[b % 8] as the reference does.
template <typename Format>
void fuse_tail_blocks(int64_t first, int64_t nb, const typename Format::Block* tail, const BlockQ8_0* y,
                      __m256i levels, float* l) {
  for (int64_t b = first; b < nb; ++b) {
    const __m256i w = iq4_group(tail[b - first].qs, levels);
    const int32_t isum = iq4_total(iq4_partials(w, _mm256_abs_epi8(w), y[b].qs));
    l[b % 8] = iq4_fma(Format::scale(tail[b - first]) * iq4_half(y[b].d), static_cast<float>(isum), l[b % 8]);
  }
}

template <typename Format, int R>
void nibble_table_tile(int64_t nb, const typename Format::Block* x, const uint8_t* a, size_t a_stride, float* out,
                       int64_t out_stride) {
  const __m256i levels = Format::levels();
  const BlockQ8_0* y[R];
  for (int r = 0; r < R; ++r) y[r] = reinterpret_cast<const BlockQ8_0*>(a + static_cast<size_t>(r) * a_stride);
  __m256 lanes[R];
  for (int r = 0; r < R; ++r) lanes[r] = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 8 <= nb; b += 8) {
    __m256i p[R][8];
    for (int k = 0; k < 8; ++k) {
      const __m256i w = iq4_group(x[b + k].qs, levels);
      const __m256i w_abs = _mm256_abs_epi8(w);
      for (int r = 0; r < R; ++r) p[r][k] = iq4_partials(w, w_abs, y[r][b + k].qs);
    }
    const __m256 dw = Format::scales8(x + b);
    for (int r = 0; r < R; ++r) {
      const BlockQ8_0* yr = y[r] + b;
      const __m256 da = _mm256_cvtph_ps(_mm_setr_epi16(
          static_cast<int16_t>(yr[0].d), static_cast<int16_t>(yr[1].d), static_cast<int16_t>(yr[2].d),
          static_cast<int16_t>(yr[3].d), static_cast<int16_t>(yr[4].d), static_cast<int16_t>(yr[5].d),
          static_cast<int16_t>(yr[6].d), static_cast<int16_t>(yr[7].d)));
      lanes[r] = _mm256_fmadd_ps(_mm256_mul_ps(dw, da), _mm256_cvtepi32_ps(iq4_totals8(p[r])), lanes[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    alignas(32) float l[8];
    _mm256_store_ps(l, lanes[r]);
    fuse_tail_blocks<Format>(b, nb, x + b, y[r], levels, l);
    out[r * out_stride] = ref::sum_iq4_nl_lanes(l);
  }
}

// MXFP4 on its repacked layout (quant/panel_layout.h): each row's blocks in groups of 8,
// chunk i of a group (32 bytes) holding the packed nibbles of dword i of its 8 blocks, lane
// k for block k, then the 8 exponents; the last n_blocks % 8 blocks as in the file. A
// group's weights are then 8 vectors W[j], lane k = 4 weights of block k (j < 4: elements
// 4j..4j+3, low nibbles; j >= 4: elements 16 + 4(j - 4).., high nibbles), looked up as
// level + 12 (unsigned, as Iq4Dot::dot wants them: at most 24, so AVX2's int16 pair sums
// cannot saturate). Tokens are staged to match: A[j] lane k =
// dword j of block k's quants, so that 8 Iq4Dot::dot leave block k's exact sum of (level + 12)
// * a in lane k, and 12 * (block k's activation sum) comes off it: the reference's integer
// per block, already in the lane the reference fuses it into (block b in lane b % 8, float
// steps of kernels_ref.h). So the bits are the reference's, as in the row kernel.
constexpr int kMxGroupBlocks = kMxfp4GroupBlocks;
constexpr size_t kMxGroupBytes = kMxGroupBlocks * sizeof(BlockMXFP4);
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
  const __m256i signed_levels = Mxfp4Format::levels();
  const __m256i levels = _mm256_add_epi8(signed_levels, _mm256_set1_epi8(12));
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
    const __m256 dw =
        mxfp4_scales8(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(group + 128))));
    for (int t = 0; t < kTokens; ++t) {
      const StagedMxGroup& s = staged[t * n_groups + g];
      __m256i acc = Iq4Dot::dot(_mm256_setzero_si256(), w[0], s.a[0]);
      for (int j = 1; j < 8; ++j) acc = Iq4Dot::dot(acc, w[j], s.a[j]);
      const __m256i isum = _mm256_sub_epi32(acc, s.offset);
      lanes[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, s.d), _mm256_cvtepi32_ps(isum), lanes[t]);
    }
  }
  const int64_t first = full * kMxGroupBlocks;  // the tail blocks lie as in the file
  const auto* tail = reinterpret_cast<const BlockMXFP4*>(row + static_cast<size_t>(full) * kMxGroupBytes);
  for (int t = 0; t < kTokens; ++t) {
    alignas(32) float l[8];
    _mm256_store_ps(l, lanes[t]);
    fuse_tail_blocks<Mxfp4Format>(first, nb, tail, reinterpret_cast<const BlockQ8_0*>(a + static_cast<size_t>(t) * a_stride),
                                  signed_levels, l);
    results[t] = ref::sum_iq4_nl_lanes(l);
  }
}

// The panel kernel's entry (simd_kernels.h's contract), kTokenTile tokens per unpacking of
// a group's weights (registers: 8 weight vectors and kTokenTile sums).
template <int kTokenTile>
void mx_panels(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride, int64_t n_a_rows,
               float* out, int64_t out_stride, RunningMax* row_max) {
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
      for (int64_t t = 0; t < n_tokens; t += kTokenTile) {
        float results[kTokenTile];
        const StagedMxGroup* s = staged + t * n_groups;
        const uint8_t* y = chunk + static_cast<size_t>(t) * a_stride;
        const int64_t tile = std::min<int64_t>(kTokenTile, n_tokens - t);
        if (tile == kTokenTile) {
          mx_row_tile<kTokenTile>(nb, row, s, n_groups, y, a_stride, results);
        } else {
          for (int64_t i = 0; i < tile; ++i) {  // the same steps, a token at a time
            mx_row_tile<1>(nb, row, s + i * n_groups, n_groups, y + static_cast<size_t>(i) * a_stride, a_stride, results + i);
          }
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

// One weight row against n_a_rows activation rows, kRowTile at a time.
template <typename Block, template <int> class Tile, int64_t kBlockSize>
void iq4_rows(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows, float* out,
              int64_t out_stride) {
  const int64_t nb = n / kBlockSize;
  const auto* x = static_cast<const Block*>(w);
  const auto* rows = static_cast<const uint8_t*>(a);
  int64_t t = 0;
  for (; t + kRowTile <= n_a_rows; t += kRowTile) {
    Tile<kRowTile>::run(nb, x, rows + static_cast<size_t>(t) * a_stride, a_stride, out + t * out_stride, out_stride);
  }
  switch (n_a_rows - t) {
    case 3: Tile<3>::run(nb, x, rows + static_cast<size_t>(t) * a_stride, a_stride, out + t * out_stride, out_stride); break;
    case 2: Tile<2>::run(nb, x, rows + static_cast<size_t>(t) * a_stride, a_stride, out + t * out_stride, out_stride); break;
    case 1: Tile<1>::run(nb, x, rows + static_cast<size_t>(t) * a_stride, a_stride, out + t * out_stride, out_stride); break;
    default: break;
  }
}

template <int R>
struct Iq4NlTile {
  static void run(int64_t nb, const BlockIQ4_NL* x, const uint8_t* a, size_t a_stride, float* out, int64_t out_stride) {
    nibble_table_tile<Iq4NlFormat, R>(nb, x, a, a_stride, out, out_stride);
  }
};
template <int R>
struct Mxfp4Tile {
  static void run(int64_t nb, const BlockMXFP4* x, const uint8_t* a, size_t a_stride, float* out, int64_t out_stride) {
    nibble_table_tile<Mxfp4Format, R>(nb, x, a, a_stride, out, out_stride);
  }
};

// IQ4_XS: R activation rows against one weight row, the including file's own (after this).
template <int R>
void iq4_xs_tile(int64_t nb, const BlockIQ4_XS* x, const uint8_t* a, size_t a_stride, float* out, int64_t out_stride);
template <int R>
struct Iq4XsTile {
  static void run(int64_t nb, const BlockIQ4_XS* x, const uint8_t* a, size_t a_stride, float* out, int64_t out_stride) {
    iq4_xs_tile<R>(nb, x, a, a_stride, out, out_stride);
  }
};

// The entries simd_kernels.h declares, the MXFP4 panels' token tile given; expanded after
// the including file's anonymous namespace, in its own.
#define TM_IQ4_ENTRIES(kMxTokenTile)                                                              \
  TM_DOT_ROWS_ENTRY(vec_dot_rows_iq4_nl_q8_0, iq4_rows<BlockIQ4_NL, Iq4NlTile, kLegacyBlockSize>) \
  TM_DOT_ROWS_ENTRY(vec_dot_rows_iq4_xs_q8_K, iq4_rows<BlockIQ4_XS, Iq4XsTile, kSuperBlockSize>)  \
  TM_DOT_ROWS_ENTRY(vec_dot_rows_mxfp4_q8_0, iq4_rows<BlockMXFP4, Mxfp4Tile, kLegacyBlockSize>)   \
  TM_DOT_PANELS_ENTRY(vec_dot_panels_mxfp4_q8_0, mx_panels<kMxTokenTile>)
