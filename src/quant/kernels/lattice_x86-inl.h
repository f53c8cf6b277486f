// The lattice i-quants' dot products against Q8_K (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,
// IQ1_S, IQ1_M) for x86, written once over 256-bit vectors for every x86 set: the including
// file defines, inside an anonymous namespace,
//
//   struct LatticeDot {
//     // acc + per 32-bit lane, the two pair sums of products u[i] * s[i] (vpmaddubsw: u
//     // unsigned, s signed, at most 2 * 62 * 127, no saturation) each times its 16-bit
//     // lane of `scales`
//     static __m256i dot(__m256i acc, __m256i u, __m256i s, __m256i scales);
//   };
//
// then includes this body in that namespace (after <cstring>, quant/blocks.h,
// quant/iq_grids.h, quant/kernels_ref.h, quant/kernels/lattice_facts.h,
// quant/kernels/scratch.h and quant/kernels/x86_helpers.h), so each copy has internal
// linkage.
//
// A sub-block of 32 weights is one vector: its grid points (4 or 8 table rows) side by
// side. The IQ2/IQ3 grids hold unsigned values, so the signs go onto the activations
// (vpsignb, exact: Q8_K's quants are never -128); the IQ1 grid holds -1, 0, 1, so it is
// the activations' sign operand itself against a vector of ones, and the shift of ±1/8 is
// a second sum of the activations under the shift's signs. Each 32-bit lane's sum is
// multiplied by its sub-block scale (one per 16 or 32 weights) in the same instruction
// that adds its pairs (vpmaddwd, or VNNI's vpdpwssd), and added up exactly;
// the float steps after each super-block's integer sums are the reference's
// (quants_iq_lattice.cc: one fused multiply-add per super-block), so every set gives its bits.
//
// Activation rows are taken kLatticeRowTile at a time: a sub-block's grid points and
// signs are gathered once for them all, and for many rows once for the whole call (then,
// for the formats without a shift, as signed weights offset to unsigned bytes: OffsetBlock).

constexpr int kLatticeRowTile = 4;

// The ±1 bytes of a sign pattern's 7 stored bits (iq_sign_pattern gives the 8th): byte j
// of v[i] is -1 where bit j of the pattern is set, else 1 (vpsignb's operand for eight
// activations).
constexpr struct StoredSignBytes {
  uint64_t v[128];
  constexpr StoredSignBytes() : v() {
    for (uint32_t i = 0; i < 128; ++i) {
      const uint32_t pattern = iq_sign_pattern(i);
      for (int j = 0; j < 8; ++j) v[i] |= static_cast<uint64_t>((pattern >> j) & 1 ? 0xff : 0x01) << (8 * j);
    }
  }
} kStoredSignBytes;

// Decode is bound by loads and by the shuffle port (one each per cycle on some x86
// cores). Grid rows are assembled by broadcasting loads and blends, which need no
// shuffle; sign patterns that sit side by side in a block are spread in registers (one
// load for one or more sub-blocks, a shuffle for each) in place of four table loads.

// The four 8-byte rows at p0..p3, side by side.
inline __m256i rows8x4(const void* p0, const void* p1, const void* p2, const void* p3) {
  auto b = [](const void* p) { return _mm256_castpd_si256(_mm256_broadcast_sd(static_cast<const double*>(p))); };
  const __m256i lo = _mm256_blend_epi32(b(p0), b(p1), 0x0c);
  const __m256i hi = _mm256_blend_epi32(b(p2), b(p3), 0xc0);
  return _mm256_blend_epi32(lo, hi, 0xf0);
}

// The eight 4-byte rows at p[0..7], side by side.
inline __m256i rows4x8(const void* const p[8]) {
  auto b = [](const void* q) { return _mm256_castps_si256(_mm256_broadcast_ss(static_cast<const float*>(q))); };
  const __m256i a = _mm256_blend_epi32(b(p[0]), b(p[1]), 0x02), c = _mm256_blend_epi32(b(p[2]), b(p[3]), 0x08);
  const __m256i e = _mm256_blend_epi32(b(p[4]), b(p[5]), 0x20), g = _mm256_blend_epi32(b(p[6]), b(p[7]), 0x80);
  return _mm256_blend_epi32(_mm256_blend_epi32(a, c, 0x0c), _mm256_blend_epi32(e, g, 0xc0), 0xf0);
}

// Four stored sign patterns at bits 0, 7, 14, 21 of `bits` as ±1 bytes.
inline __m256i stored_signs(uint32_t bits) {
  return rows8x4(&kStoredSignBytes.v[bits & 127], &kStoredSignBytes.v[(bits >> 7) & 127],
                 &kStoredSignBytes.v[(bits >> 14) & 127], &kStoredSignBytes.v[(bits >> 21) & 127]);
}

// ±1 bytes from bytes that each hold a sign pattern: byte i is -1 where bit i % 8 of byte
// i of `spread` is set, else 1 (vpsignb's operand).
inline __m256i signs_of_spread_bits(__m256i spread) {
  const __m256i bits = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bits), bits), _mm256_set1_epi8(1));
}

// Four sign bytes, one bit per weight, as ±1 bytes: one load, then registers.
inline __m256i bit_signs(const uint8_t* b) {
  return signs_of_spread_bits(_mm256_shuffle_epi8(
      _mm256_castps_si256(_mm256_broadcast_ss(reinterpret_cast<const float*>(b))),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3)));
}

inline uint32_t word(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The 16-bit scale operand of a sub-block: entry i is 2 * (i & 15) + 1 in the lanes of its
// first 16 weights and 2 * (i >> 4) + 1 in those of its last 16 (every format's odd scale).
constexpr struct HalfScales {
  alignas(32) int16_t v[256][16];
  constexpr HalfScales() : v() {
    for (int i = 0; i < 256; ++i) {
      for (int l = 0; l < 16; ++l) v[i][l] = static_cast<int16_t>(2 * (l < 8 ? i & 15 : i >> 4) + 1);
    }
  }
} kHalfScales;

// The operand of a byte holding the two halves' 4-bit scales (low nibble first).
inline __m256i packed_half_scales(uint8_t nibbles) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(kHalfScales.v[nibbles]));
}
inline __m256i half_scales(uint32_t low, uint32_t high) { return packed_half_scales(low | high << 4); }
inline __m256i scale(uint32_t s) { return half_scales(s, s); }

// One sub-block (32 weights) of a format: u (unsigned bytes) and s (signs, or IQ1's grid)
// such that weight_i * a_i = u_i * sign(a_i, s_i); the scale of each 16-bit pair sum; for
// the IQ1 formats also the shift's signs (±1 bytes).
struct SubBlock {
  __m256i u, s, scales, shift_signs;
};

struct Iq2XxsFormat : Iq2XxsFacts {
  static SubBlock sub_block(const Block& x, int ib) {
    const uint32_t a0 = word(&x.qs[4 * ib]), a1 = word(&x.qs[4 * ib + 2]);
    return {rows8x4(kIq2XxsGrid[a0 & 0xff], kIq2XxsGrid[(a0 >> 8) & 0xff], kIq2XxsGrid[(a0 >> 16) & 0xff],
                    kIq2XxsGrid[a0 >> 24]),
            stored_signs(a1), scale(a1 >> 28), _mm256_setzero_si256()};
  }
};

// The sign patterns of sixteen IQ2_XS entries (each its top 7 bits, the 8th bit the
// parity of those 7): byte 2k of 64-bit lane j is entry 4j + k's pattern, computed in
// registers (see above). Each entry's odd byte is 0.
inline __m256i iq2_xs_sign_patterns(const uint16_t* q) {
  // Byte i (in each 128-bit lane): 0x80 where i has an odd number of set bits.
  const __m256i odd = _mm256_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0,
                                       0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0);
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
  const __m256i stored = _mm256_srli_epi16(v, 9);
  // Bits 0..3 of stored ^ (stored >> 4) have stored's parity; the byte is below 128, as
  // vpshufb needs, and each entry's high byte is 0 (so it stays 0).
  const __m256i folded = _mm256_xor_si256(stored, _mm256_srli_epi16(v, 13));
  return _mm256_or_si256(stored, _mm256_shuffle_epi8(odd, folded));
}

// 64-bit lane J of `patterns` (four sign patterns at its even bytes) as ±1 bytes.
template <int J>
inline __m256i spread_sign_patterns(__m256i patterns) {
  return signs_of_spread_bits(_mm256_shuffle_epi8(
      _mm256_permute4x64_epi64(patterns, J * 0x55),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6, 6, 6, 6)));
}

struct Iq2XsFormat : Iq2XsFacts {
  static SubBlock sub_block(const Block& x, int ib) {
    const uint16_t* q = x.qs + 4 * ib;
    // The patterns of sub-blocks ib & ~3 .. (ib & ~3) + 3, the same operations on the
    // same load for each of them: computed once where the sub-blocks are unrolled.
    const __m256i patterns = iq2_xs_sign_patterns(x.qs + 4 * (ib & ~3));
    __m256i signs;
    switch (ib & 3) {
      case 0: signs = spread_sign_patterns<0>(patterns); break;
      case 1: signs = spread_sign_patterns<1>(patterns); break;
      case 2: signs = spread_sign_patterns<2>(patterns); break;
      default: signs = spread_sign_patterns<3>(patterns); break;
    }
    return {rows8x4(kIq2XsGrid[q[0] & 511], kIq2XsGrid[q[1] & 511], kIq2XsGrid[q[2] & 511], kIq2XsGrid[q[3] & 511]),
            signs, packed_half_scales(x.scales[ib]), _mm256_setzero_si256()};
  }
};

struct Iq2SFormat : Iq2SFacts {
  static SubBlock sub_block(const Block& x, int ib) {
    const uint8_t* q = x.qs + 4 * ib;
    const uint32_t h = x.qh[ib];
    return {rows8x4(kIq2SGrid[q[0] | (h & 3) << 8], kIq2SGrid[q[1] | (h >> 2 & 3) << 8],
                    kIq2SGrid[q[2] | (h >> 4 & 3) << 8], kIq2SGrid[q[3] | (h >> 6 & 3) << 8]),
            bit_signs(x.signs + 4 * ib), packed_half_scales(x.scales[ib]), _mm256_setzero_si256()};
  }
};

struct Iq3XxsFormat : Iq3XxsFacts {
  // A sub-block but for its grid rows (u).
  static SubBlock sub_block_signs(const Block& x, int ib) {
    const uint32_t a1 = word(x.scales_and_signs + 4 * ib);
    return {_mm256_setzero_si256(), stored_signs(a1), scale(a1 >> 28), _mm256_setzero_si256()};
  }
  static SubBlock sub_block(const Block& x, int ib) {
    const uint8_t* q = x.qs + 8 * ib;
    const void* const rows[8] = {kIq3XxsGrid[q[0]], kIq3XxsGrid[q[1]], kIq3XxsGrid[q[2]], kIq3XxsGrid[q[3]],
                                 kIq3XxsGrid[q[4]], kIq3XxsGrid[q[5]], kIq3XxsGrid[q[6]], kIq3XxsGrid[q[7]]};
    SubBlock sb = sub_block_signs(x, ib);
    sb.u = rows4x8(rows);
    return sb;
  }
};

struct Iq3SFormat : Iq3SFacts {
  // A sub-block but for its grid rows (u).
  static SubBlock sub_block_signs(const Block& x, int ib) {
    return {_mm256_setzero_si256(), bit_signs(x.signs + 4 * ib), scale((x.scales[ib / 2] >> (4 * (ib % 2))) & 0xf),
            _mm256_setzero_si256()};
  }
  static SubBlock sub_block(const Block& x, int ib) {
    const uint8_t* q = x.qs + 8 * ib;
    const uint32_t h = x.qh[ib];
    const void* rows[8];
    for (int k = 0; k < 8; ++k) rows[k] = kIq3SGrid[q[k] | (h >> k & 1) << 8];
    SubBlock sb = sub_block_signs(x, ib);
    sb.u = rows4x8(rows);
    return sb;
  }
};

// The eight 4-byte grid rows of an IQ3 sub-block by one vector gather (vpgatherdd) in
// place of eight broadcasting loads and seven blends: the same vector, and faster on
// the CPUs whose gathers are (the load-time tuner times both: dispatch.h's
// decode_variant). index: lane k = row k's grid index.
inline __m256i gathered_rows4x8(const uint8_t (*grid)[4], __m256i index) {
  return _mm256_i32gather_epi32(reinterpret_cast<const int*>(grid), index, 4);
}

struct Iq3XxsGatheredFormat : Iq3XxsFormat {
  static SubBlock sub_block(const Block& x, int ib) {
    SubBlock sb = Iq3XxsFormat::sub_block_signs(x, ib);
    const __m128i index = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x.qs + 8 * ib));
    sb.u = gathered_rows4x8(kIq3XxsGrid, _mm256_cvtepu8_epi32(index));
    return sb;
  }
};

struct Iq3SGatheredFormat : Iq3SFormat {
  static SubBlock sub_block(const Block& x, int ib) {
    SubBlock sb = Iq3SFormat::sub_block_signs(x, ib);
    // Index k: qs[8 ib + k] with bit k of qh[ib] as its ninth bit.
    const __m256i high = _mm256_and_si256(
        _mm256_srlv_epi32(_mm256_set1_epi32(x.qh[ib]), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)), _mm256_set1_epi32(1));
    const __m256i low = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x.qs + 8 * ib)));
    sb.u = gathered_rows4x8(kIq3SGrid, _mm256_or_si256(low, _mm256_slli_epi32(high, 8)));
    return sb;
  }
};

// The shift's sign on all eight bytes of a group: row 0 for +1, row 1 for -1.
constexpr uint64_t kShiftRows[2] = {0x0101010101010101, ~uint64_t{0}};

struct Iq1SFormat : Iq1SFacts {
  static SubBlock sub_block(const Block& x, int ib) {
    const uint8_t* q = x.qs + 4 * ib;
    const uint32_t h = x.qh[ib];
    return {_mm256_set1_epi8(1),
            rows8x4(kIq1SGrid[q[0] | (h & 7) << 8], kIq1SGrid[q[1] | (h >> 3 & 7) << 8],
                    kIq1SGrid[q[2] | (h >> 6 & 7) << 8], kIq1SGrid[q[3] | (h >> 9 & 7) << 8]),
            scale((h >> 12) & 7), _mm256_set1_epi8(h & 0x8000 ? -1 : 1)};
  }
};

struct Iq1MFormat : Iq1MFacts {
  static SubBlock sub_block(const Block& x, int ib) {
    const uint8_t* q = x.qs + 4 * ib;
    const uint32_t h = x.qh[2 * ib] | static_cast<uint32_t>(x.qh[2 * ib + 1]) << 8;  // a nibble per group
    const uint32_t sc = x.scales[ib / 2] >> (6 * (ib % 2));
    // Bit 3 of each group's nibble: the sign of its shift.
    return {_mm256_set1_epi8(1),
            rows8x4(kIq1SGrid[q[0] | (h & 7) << 8], kIq1SGrid[q[1] | (h >> 4 & 7) << 8],
                    kIq1SGrid[q[2] | (h >> 8 & 7) << 8], kIq1SGrid[q[3] | (h >> 12 & 7) << 8]),
            half_scales(sc & 7, sc >> 3 & 7),
            rows8x4(&kShiftRows[h >> 3 & 1], &kShiftRows[h >> 7 & 1], &kShiftRows[h >> 11 & 1], &kShiftRows[h >> 15 & 1])};
  }
};

// A tile's integer sums for one super-block b of R activation rows y: per row, the grid
// sum (times the sub-block scales) and for the IQ1 formats the shift's sum, each as eight
// 32-bit lanes whose total is the exact integer the reference forms. The sub-blocks are
// gathered from the row's blocks as they are needed (decode, small batches: FromBlocks)
// or read back from a row gathered once beforehand (the IQ1 formats in prefill:
// FromGathered); the other formats' prefill is offset_tile below.
template <typename Format, typename SubBlocks>
struct GatheredSums {
  SubBlocks sub_blocks;

  template <int R>
  void operator()(int64_t b, const BlockQ8_K* const* y, __m256i* grid, __m256i* shift) const {
    const __m256i ones = _mm256_set1_epi8(1);
    // Few rows leave the accumulators' latency exposed: then even and odd sub-blocks add
    // into two chains (exact integer sums, so any split gives the same totals).
    constexpr int kChains = R <= 2 ? 2 : 1;
    __m256i grid_acc[kChains][R], shift_acc[kChains][R];
    for (int c = 0; c < kChains; ++c) {
      for (int r = 0; r < R; ++r) grid_acc[c][r] = shift_acc[c][r] = _mm256_setzero_si256();
    }
#pragma GCC unroll 8
    for (int ib = 0; ib < kSuperBlockSize / 32; ++ib) {
      const int c = ib % kChains;  // a constant once unrolled: the accumulators stay in registers
      const SubBlock& sb = sub_blocks.get(b, ib);
      for (int r = 0; r < R; ++r) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[r][b].qs + 32 * ib));
        grid_acc[c][r] = LatticeDot::dot(grid_acc[c][r], sb.u, _mm256_sign_epi8(q, sb.s), sb.scales);
        if constexpr (Format::kShifted) {
          shift_acc[c][r] = LatticeDot::dot(shift_acc[c][r], ones, _mm256_sign_epi8(q, sb.shift_signs), sb.scales);
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      grid[r] = grid_acc[0][r];
      shift[r] = shift_acc[0][r];
      for (int c = 1; c < kChains; ++c) {
        grid[r] = _mm256_add_epi32(grid[r], grid_acc[c][r]);
        shift[r] = _mm256_add_epi32(shift[r], shift_acc[c][r]);
      }
    }
  }
};

template <typename Format>
struct FromBlocks {
  const typename Format::Block* x;
  SubBlock get(int64_t b, int ib) const { return Format::sub_block(x[b], ib); }
};
struct FromGathered {
  const SubBlock* sub_blocks;
  const SubBlock& get(int64_t b, int ib) const { return sub_blocks[b * (kSuperBlockSize / 32) + ib]; }
};

// A super-block of a format without a shift, unpacked once for prefill: each weight
// (grid value with its sign, |w| <= 62) plus 64 as an unsigned byte, so that one
// vpmaddubsw against the activations takes the place of vpsignb and vpmaddubsw (pair sums
// at most 2 * 126 * 127, no saturation); the 64 times the activations' scaled sums is
// taken back from Q8_K's 16-weight sums, exactly: each tile's integer sums start from it.
struct OffsetBlock {
  __m256i weights[kSuperBlockSize / 32];
  __m256i scales[kSuperBlockSize / 32];  // as SubBlock::scales
  __m256i offset_scales;                 // lane g (int16): -64 times the scale of weights 16g .. 16g + 15
  float d;                               // the super-block scale
};
constexpr int kWeightOffset = 64;

template <typename Format>
void unpack_offset_block(const typename Format::Block& x, OffsetBlock& o) {
  alignas(32) int16_t lanes[16], groups[16];
#pragma GCC unroll 8
  for (int ib = 0; ib < kSuperBlockSize / 32; ++ib) {
    const SubBlock sb = Format::sub_block(x, ib);
    o.weights[ib] = _mm256_add_epi8(_mm256_sign_epi8(sb.u, sb.s), _mm256_set1_epi8(kWeightOffset));
    o.scales[ib] = sb.scales;
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), sb.scales);
    groups[2 * ib] = static_cast<int16_t>(-kWeightOffset * lanes[0]);
    groups[2 * ib + 1] = static_cast<int16_t>(-kWeightOffset * lanes[8]);
  }
  o.offset_scales = _mm256_load_si256(reinterpret_cast<const __m256i*>(groups));
  o.d = _cvtsh_ss(Format::scale_bits(x));
}

// W weight rows (unpacked) against R activation rows: each activation vector loaded once
// for all W weight rows, which halves the activations' traffic from L2 (what bounds this
// loop) for W = 2. out[r * out_stride + w].
template <typename Format, int W, int R>
void offset_tile(int64_t nb, const OffsetBlock* const* blocks, const uint8_t* a, size_t a_stride, float* out,
                 int64_t out_stride) {
  const BlockQ8_K* y[R];
  for (int r = 0; r < R; ++r) y[r] = reinterpret_cast<const BlockQ8_K*>(a + static_cast<size_t>(r) * a_stride);
  __m128 sums[W];  // lane r: activation row r's running sum
  for (int w = 0; w < W; ++w) sums[w] = _mm_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m256i acc[W][R];
    for (int r = 0; r < R; ++r) {
      const __m256i q_sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[r][b].bsums));
      for (int w = 0; w < W; ++w) acc[w][r] = _mm256_madd_epi16(q_sums, _mm256_load_si256(&blocks[w][b].offset_scales));
    }
#pragma GCC unroll 8
    for (int ib = 0; ib < kSuperBlockSize / 32; ++ib) {
      __m256i weights[W], scales[W];
      for (int w = 0; w < W; ++w) {
        weights[w] = _mm256_load_si256(&blocks[w][b].weights[ib]);
        scales[w] = _mm256_load_si256(&blocks[w][b].scales[ib]);
      }
      for (int r = 0; r < R; ++r) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[r][b].qs + 32 * ib));
        for (int w = 0; w < W; ++w) acc[w][r] = LatticeDot::dot(acc[w][r], weights[w], q, scales[w]);
      }
    }
    float row_d[R];
    for (int r = 0; r < R; ++r) row_d[r] = y[r][b].d;
    const __m128 a_d = lanes_of<R>(row_d);
    for (int w = 0; w < W; ++w) {
      // As lattice_tile: the reference's fused step for the R rows at once.
      const __m128 total = _mm_cvtepi32_ps(lane_totals<R>(acc[w]));
      sums[w] = _mm_fmadd_ps(_mm_mul_ps(_mm_set1_ps(blocks[w][b].d), a_d), total, sums[w]);
    }
  }
  for (int w = 0; w < W; ++w) {
    alignas(16) float lanes[4];
    _mm_store_ps(lanes, sums[w]);
    for (int r = 0; r < R; ++r) out[r * out_stride + w] = Format::kFinal * lanes[r];
  }
}

template <typename Format, int W>
void offset_tiles(int64_t nb, const OffsetBlock* const* blocks, const uint8_t* rows, size_t a_stride,
                  int64_t n_a_rows, float* out, int64_t out_stride) {
  for_token_tiles<kLatticeRowTile>(n_a_rows, [&](auto tokens, int64_t t) {
    offset_tile<Format, W, decltype(tokens)::value>(nb, blocks, rows + static_cast<size_t>(t) * a_stride, a_stride,
                                                    out + t * out_stride, out_stride);
  });
}

// Weight rows per prefill tile: as many as the accumulators (W * kLatticeRowTile) and the
// weight operands leave registers for: 16 vector registers with AVX2, 32 with AVX-512.
#if defined(__AVX512VL__)
constexpr int kMatrixWeightRows = 4;
#else
constexpr int kMatrixWeightRows = 2;
#endif

// W consecutive weight rows unpacked into scratch memory, one after another.
template <typename Format, int W>
void unpack_offset_rows(int64_t nb, const typename Format::Block* const* x, const OffsetBlock** blocks) {
  auto* scratch = static_cast<OffsetBlock*>(
      thread_scratch(ScratchSlot::kPanel, static_cast<size_t>(W * nb) * sizeof(OffsetBlock)));
  for (int w = 0; w < W; ++w) {
    for (int64_t b = 0; b < nb; ++b) unpack_offset_block<Format>(x[w][b], scratch[w * nb + b]);
    blocks[w] = scratch + w * nb;
  }
}

template <typename Format, int R, typename Sums>
void lattice_tile(int64_t nb, const typename Format::Block* x, const Sums& super_block_sums, const uint8_t* a,
                  size_t a_stride, float* out, int64_t out_stride) {
  const BlockQ8_K* y[R];
  for (int r = 0; r < R; ++r) y[r] = reinterpret_cast<const BlockQ8_K*>(a + static_cast<size_t>(r) * a_stride);
  __m128 sums = _mm_setzero_ps();  // lane r: row r's running sum
  for (int64_t b = 0; b < nb; ++b) {
    __m256i grid[R], shift[R];
    super_block_sums.template operator()<R>(b, y, grid, shift);
    // The rows' super-block totals side by side, then the reference's fused step for all
    // of them at once (lane r: the same operations on the same values as its scalar form).
    __m128 total = _mm_cvtepi32_ps(lane_totals<R>(grid));
    if constexpr (Format::kShifted) {
      total = _mm_add_ps(total, _mm_mul_ps(_mm_set1_ps(0.125f), _mm_cvtepi32_ps(lane_totals<R>(shift))));
    }
    float row_d[R];
    for (int r = 0; r < R; ++r) row_d[r] = y[r][b].d;
    const __m128 scale = _mm_mul_ps(_mm_set1_ps(_cvtsh_ss(Format::scale_bits(x[b]))), lanes_of<R>(row_d));
    sums = _mm_fmadd_ps(scale, total, sums);
  }
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, sums);
  for (int r = 0; r < R; ++r) out[r * out_stride] = Format::kFinal * lanes[r];
}

// W weight rows against one activation row (decode): each activation vector loaded once
// for the W rows, their W totals reduced together, and lane w of the float step row w's
// (the reference's fused step, as lattice_tile). out[w].
template <typename Format, int W>
void lattice_rows_tile(int64_t nb, const typename Format::Block* const* x, const BlockQ8_K* y, float* out) {
  __m128 sums = _mm_setzero_ps();  // lane w: weight row w's running sum
  for (int64_t b = 0; b < nb; ++b) {
    __m256i grid[W], shift[W];
    for (int w = 0; w < W; ++w) grid[w] = shift[w] = _mm256_setzero_si256();
    const __m256i ones = _mm256_set1_epi8(1);
#pragma GCC unroll 8
    for (int ib = 0; ib < kSuperBlockSize / 32; ++ib) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs + 32 * ib));
      for (int w = 0; w < W; ++w) {
        const SubBlock sb = Format::sub_block(x[w][b], ib);
        grid[w] = LatticeDot::dot(grid[w], sb.u, _mm256_sign_epi8(q, sb.s), sb.scales);
        if constexpr (Format::kShifted) {
          shift[w] = LatticeDot::dot(shift[w], ones, _mm256_sign_epi8(q, sb.shift_signs), sb.scales);
        }
      }
    }
    __m128 total = _mm_cvtepi32_ps(lane_totals<W>(grid));
    if constexpr (Format::kShifted) {
      total = _mm_add_ps(total, _mm_mul_ps(_mm_set1_ps(0.125f), _mm_cvtepi32_ps(lane_totals<W>(shift))));
    }
    float row_d[W];
    for (int w = 0; w < W; ++w) row_d[w] = _cvtsh_ss(Format::scale_bits(x[w][b]));
    sums = _mm_fmadd_ps(_mm_mul_ps(lanes_of<W>(row_d), _mm_set1_ps(y[b].d)), total, sums);
  }
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, sums);
  for (int w = 0; w < W; ++w) out[w] = Format::kFinal * lanes[w];
}

// Rows of activations from which on a weight row is unpacked once into scratch memory and
// its tiles read it back, in place of unpacking it again for every tile of
// kLatticeRowTile rows: prefill.
constexpr int64_t kUnpackFromRows = 2 * kLatticeRowTile;

template <typename Format, typename Sums>
void lattice_tiles(int64_t nb, const typename Format::Block* x, const Sums& sums, const uint8_t* rows,
                   size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride) {
  for_token_tiles<kLatticeRowTile>(n_a_rows, [&](auto tokens, int64_t t) {
    lattice_tile<Format, decltype(tokens)::value>(nb, x, sums, rows + static_cast<size_t>(t) * a_stride, a_stride,
                                                  out + t * out_stride, out_stride);
  });
}

// One weight row against n_a_rows activation rows, kLatticeRowTile at a time.
template <typename Format>
void lattice_rows(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows, float* out,
                  int64_t out_stride) {
  const int64_t nb = n / kSuperBlockSize;
  const auto* x = static_cast<const typename Format::Block*>(w);
  const auto* rows = static_cast<const uint8_t*>(a);
  if (n_a_rows < kUnpackFromRows) {
    const GatheredSums<Format, FromBlocks<Format>> sums{{x}};
    lattice_tiles<Format>(nb, x, sums, rows, a_stride, n_a_rows, out, out_stride);
  } else if constexpr (Format::kShifted) {
    constexpr int kPerBlock = kSuperBlockSize / 32;
    auto* gathered = static_cast<SubBlock*>(
        thread_scratch(ScratchSlot::kPanel, static_cast<size_t>(nb) * kPerBlock * sizeof(SubBlock)));
    for (int64_t b = 0; b < nb; ++b) {
      for (int ib = 0; ib < kPerBlock; ++ib) gathered[b * kPerBlock + ib] = Format::sub_block(x[b], ib);
    }
    const GatheredSums<Format, FromGathered> sums{{gathered}};
    lattice_tiles<Format>(nb, x, sums, rows, a_stride, n_a_rows, out, out_stride);
  } else {
    const OffsetBlock* blocks[1];
    unpack_offset_rows<Format, 1>(nb, &x, blocks);
    offset_tiles<Format, 1>(nb, blocks, rows, a_stride, n_a_rows, out, out_stride);
  }
}

// Tokens per activation block at the least in lattice_matrix: unpacking a weight row
// costs about as much as a few dozen tokens' tiles against it, so the blocks that
// kActivationBlockBytes leaves of rows 8192 wide (28 tokens) would spend a third of their
// time unpacking; a larger block that spills from L2 costs less than that.
constexpr int64_t kLatticeMinBlockTokens = 128;

// Weight rows per decode pass (lattice_rows_tile): two share each activation load and
// keep two weight streams in flight; four leave the 8-row formats short of registers.
constexpr int kLatticeDecodeRows = 2;

// Weight rows against activation rows. Decode (one token) takes the weight rows
// kLatticeDecodeRows at a time (lattice_rows_tile); the formats without a shift in prefill
// take the activations a block at a time (kActivationBlockBytes, so that it stays in L2,
// but at least kLatticeMinBlockTokens) and the weight rows kMatrixWeightRows at a time
// (offset_tile); everything else is lattice_rows per row.
template <typename Format>
void lattice_matrix(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a, size_t a_stride,
                    int64_t n_a_rows, float* out, int64_t out_stride) {
  const auto* weight_rows = static_cast<const uint8_t*>(w);
  const auto* rows = static_cast<const uint8_t*>(a);
  if (n_a_rows == 1) {  // decode: kLatticeDecodeRows weight rows a pass
    using Block = typename Format::Block;
    const int64_t nb = n / kSuperBlockSize;
    const auto* y = static_cast<const BlockQ8_K*>(a);
    int64_t r = 0;
    for (; r + kLatticeDecodeRows <= n_w_rows; r += kLatticeDecodeRows) {
      const Block* x[kLatticeDecodeRows];
      for (int w = 0; w < kLatticeDecodeRows; ++w) x[w] = reinterpret_cast<const Block*>(weight_rows + (r + w) * w_stride);
      float results[kLatticeDecodeRows];
      lattice_rows_tile<Format, kLatticeDecodeRows>(nb, x, y, results);
      for (int w = 0; w < kLatticeDecodeRows; ++w) out[r + w] = results[w];
    }
    for (; r < n_w_rows; ++r) lattice_rows<Format>(n, weight_rows + r * w_stride, a, a_stride, 1, out + r, out_stride);
    return;
  }
  if (Format::kShifted || n_a_rows < kUnpackFromRows) {
    for (int64_t r = 0; r < n_w_rows; ++r) {
      lattice_rows<Format>(n, weight_rows + r * w_stride, a, a_stride, n_a_rows, out + r, out_stride);
    }
    return;
  }
  using Block = typename Format::Block;
  const int64_t nb = n / kSuperBlockSize;
  for_row_groups_by_token_blocks<Block, kMatrixWeightRows, kLatticeMinBlockTokens>(
      weight_rows, w_stride, n_w_rows, n_a_rows, a_stride,
      [&](const auto& x, int64_t first_row, int64_t t0, int64_t n_tokens) {
        constexpr int W = std::extent_v<std::remove_reference_t<decltype(x)>>;
        const OffsetBlock* blocks[W];
        unpack_offset_rows<Format, W>(nb, x, blocks);
        offset_tiles<Format, W>(nb, blocks, rows + static_cast<size_t>(t0) * a_stride, a_stride, n_tokens,
                                out + t0 * out_stride + first_row, out_stride);
      });
}

// The entries simd_kernels.h declares; the including file expands this after its
// anonymous namespace, in its own.
#define TM_LATTICE_ROW_ENTRIES                                             \
  TM_DOT_ROWS_ENTRY(vec_dot_rows_iq2_xxs_q8_K, lattice_rows<Iq2XxsFormat>) \
  TM_DOT_ROWS_ENTRY(vec_dot_rows_iq2_xs_q8_K, lattice_rows<Iq2XsFormat>)   \
  TM_DOT_ROWS_ENTRY(vec_dot_rows_iq2_s_q8_K, lattice_rows<Iq2SFormat>)     \
  TM_DOT_ROWS_ENTRY(vec_dot_rows_iq3_xxs_q8_K, lattice_rows<Iq3XxsFormat>) \
  TM_DOT_ROWS_ENTRY(vec_dot_rows_iq3_s_q8_K, lattice_rows<Iq3SFormat>)     \
  TM_DOT_ROWS_ENTRY(vec_dot_rows_iq1_s_q8_K, lattice_rows<Iq1SFormat>)     \
  TM_DOT_ROWS_ENTRY(vec_dot_rows_iq1_m_q8_K, lattice_rows<Iq1MFormat>)             \
  TM_DOT_MATRIX_ENTRY(vec_dot_matrix_iq2_xxs_q8_K, lattice_matrix<Iq2XxsFormat>)   \
  TM_DOT_MATRIX_ENTRY(vec_dot_matrix_iq2_xs_q8_K, lattice_matrix<Iq2XsFormat>)     \
  TM_DOT_MATRIX_ENTRY(vec_dot_matrix_iq2_s_q8_K, lattice_matrix<Iq2SFormat>)       \
  TM_DOT_MATRIX_ENTRY(vec_dot_matrix_iq3_xxs_q8_K, lattice_matrix<Iq3XxsFormat>)   \
  TM_DOT_MATRIX_ENTRY(vec_dot_matrix_iq3_s_q8_K, lattice_matrix<Iq3SFormat>)               \
  TM_DOT_ROWS_ENTRY(vec_dot_rows_iq3_xxs_q8_K_gathered, lattice_rows<Iq3XxsGatheredFormat>)     \
  TM_DOT_ROWS_ENTRY(vec_dot_rows_iq3_s_q8_K_gathered, lattice_rows<Iq3SGatheredFormat>)         \
  TM_DOT_MATRIX_ENTRY(vec_dot_matrix_iq3_xxs_q8_K_gathered, lattice_matrix<Iq3XxsGatheredFormat>) \
  TM_DOT_MATRIX_ENTRY(vec_dot_matrix_iq3_s_q8_K_gathered, lattice_matrix<Iq3SGatheredFormat>)
