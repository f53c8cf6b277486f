// The NEON dot products of the legacy _0 formats (Q4_0, Q5_0, Q8_0 against Q8_0), of the
// nibble-table formats (IQ4_NL, MXFP4 against Q8_0; IQ4_XS against Q8_K) and of Q4_K,
// Q5_K, Q6_K (against Q8_K), written once: dot_neon.cc compiles this body for
// Armv8.0 (widening multiplies, pairwise adds) inside namespace neon, dot_neon_dotprod.cc
// for CPUs with the int8 dot product (sdot) inside namespace neon_dotprod. Everything
// here has internal linkage, so the sdot copy is never linked into the plain one's calls.
//
// The results carry the x86 kernels' bits: each block's (or super-block's) integers are
// exact whatever computes them, and they then take the same float steps in the same order
// (legacy_avx2.cc, kquants_avx2.cc):
//   _0 formats:  acc = fma(float(isum_b), d_b * d_token,b, acc)       block by block
//   IQ4_NL, MXFP4: lane[b % 8] = fma(float(isum_b), d_b * d_token,b, lane[b % 8]), the
//                eight lanes added pairwise at the end (kernels_ref.h)
//   IQ4_XS:      acc = fma(float(sum_g (s_g - 32) * isum_g), d * y.d, acc)  super-block by super-block
//   K-quants:    acc = fma(-float(M), dmin * y.d, acc)                 (Q4_K, Q5_K)
//                acc = fma(float(T_lo), d * y.d, acc)
//                acc = fma(float(T_hi), d * y.d, acc)                  super-block by super-block
// with T_lo / T_hi the formats' halves of sum_j scale_j * isum_j (Q4_K: sub-blocks 0-3;
// Q5_K: 0, 1, 4, 5; Q6_K: the even 32-element steps and every -32 term) and M the
// minimum term through Q8_K's per-16 sums.

namespace {

// sum over the 16 lanes of a[i] * b[i], added into acc's 4 lanes; exact.
int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if defined(__ARM_FEATURE_DOTPROD)
  return vdotq_s32(acc, a, b);
#else
  acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
  return vpadalq_s16(acc, vmull_high_s8(a, b));
#endif
}

// Exact: 32 products of two int8 vectors pairs with the 32 quants at b.
int32_t dot32(int8x16_t a0, int8x16_t a1, const int8_t* b) {
  return vaddvq_s32(dot16(dot16(vdupq_n_s32(0), a0, vld1q_s8(b)), a1, vld1q_s8(b + 16)));
}

float half_to_float(uint16_t h) { return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0); }

// A legacy weight block as 32 signed levels (element order) and its scale.
struct Levels {
  int8x16_t lo, hi;  // elements 0-15, 16-31
  float d;
};

Levels unpack(const BlockQ8_0& b) { return {vld1q_s8(b.qs), vld1q_s8(b.qs + 16), half_to_float(b.d)}; }

Levels unpack(const BlockQ4_0& b) {
  const uint8x16_t bytes = vld1q_u8(b.qs);
  const int8x16_t eight = vdupq_n_s8(8);
  return {vsubq_s8(vreinterpretq_s8_u8(vandq_u8(bytes, vdupq_n_u8(0x0f))), eight),
          vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(bytes, 4)), eight), half_to_float(b.d)};
}

// 0x10 in byte i where bit i of the 32-bit field at qh is set, for i in [first, first + 16).
uint8x16_t fifth_bits(const uint8_t* qh, int first) {
  const uint8x8_t low = vdup_n_u8(qh[first / 8]), high = vdup_n_u8(qh[first / 8 + 1]);
  const uint8_t bit_of_lane[8] = {1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x8_t bits = vld1_u8(bit_of_lane);
  const uint8x16_t set = vcombine_u8(vtst_u8(low, bits), vtst_u8(high, bits));
  return vandq_u8(set, vdupq_n_u8(0x10));
}

Levels unpack(const BlockQ5_0& b) {
  const uint8x16_t bytes = vld1q_u8(b.qs);
  const int8x16_t sixteen = vdupq_n_s8(16);
  const uint8x16_t lo = vorrq_u8(vandq_u8(bytes, vdupq_n_u8(0x0f)), fifth_bits(b.qh, 0));
  const uint8x16_t hi = vorrq_u8(vshrq_n_u8(bytes, 4), fifth_bits(b.qh, 16));
  return {vsubq_s8(vreinterpretq_s8_u8(lo), sixteen), vsubq_s8(vreinterpretq_s8_u8(hi), sixteen), half_to_float(b.d)};
}

// The 32 levels of a nibble-table group (16 bytes: elements 0-15 in the low nibbles, 16-31
// in the high ones), one table lookup each half.
Levels table_levels(const uint8_t* qs, int8x16_t table) {
  const uint8x16_t bytes = vld1q_u8(qs);
  return {vqtbl1q_s8(table, vandq_u8(bytes, vdupq_n_u8(0x0f))), vqtbl1q_s8(table, vshrq_n_u8(bytes, 4)), 0.0f};
}

template <typename Block>
constexpr bool kNibbleTable = std::is_same_v<Block, BlockIQ4_NL> || std::is_same_v<Block, BlockMXFP4>;

const int8_t* levels_table(const BlockIQ4_NL*) { return ref::kIq4Levels; }
const int8_t* levels_table(const BlockMXFP4*) { return ref::kMxfp4Levels; }
float block_scale(const BlockIQ4_NL& b) { return half_to_float(b.d); }
float block_scale(const BlockMXFP4& b) { return mxfp4_scale(b.e); }

// IQ4_NL / MXFP4 against kTokens Q8_0 rows: block b's exact sum into lane b % 8.
template <typename Block, int kTokens>
void nibble_table_tile(int64_t n_blocks, const Block* w, const uint8_t* a, size_t a_stride, float* out,
                       int64_t out_stride) {
  const int8x16_t table = vld1q_s8(levels_table(w));
  float lanes[kTokens][ref::kIq4NlLanes] = {};
  for (int64_t b = 0; b < n_blocks; ++b) {
    __builtin_prefetch(reinterpret_cast<const char*>(w + b) + 1024, 0, 3);
    const Levels levels = table_levels(w[b].qs, table);
    const float dw = block_scale(w[b]);
    for (int t = 0; t < kTokens; ++t) {
      const BlockQ8_0& y = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride)[b];
      float& lane = lanes[t][b % ref::kIq4NlLanes];
      lane = __builtin_fmaf(static_cast<float>(dot32(levels.lo, levels.hi, y.qs)), dw * half_to_float(y.d), lane);
    }
  }
  for (int t = 0; t < kTokens; ++t) out[t * out_stride] = ref::sum_iq4_nl_lanes(lanes[t]);
}

// IQ4_XS against kTokens Q8_K rows: per super-block the groups' exact sums times their
// scales, one integer, fused into the running sum.
template <int kTokens>
void iq4_xs_tile(int64_t n_blocks, const BlockIQ4_XS* w, const uint8_t* a, size_t a_stride, float* out,
                 int64_t out_stride) {
  const int8x16_t table = vld1q_s8(ref::kIq4Levels);
  float acc[kTokens] = {};
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (size_t line = 0; line < sizeof(BlockIQ4_XS); line += 64) {
      __builtin_prefetch(reinterpret_cast<const char*>(w + b) + 2048 + line, 0, 3);
    }
    int32_t isum[kTokens] = {};
    for (int g = 0; g < 8; ++g) {
      const Levels levels = table_levels(w[b].qs + 16 * g, table);
      const int32_t scale = iq4_xs_scale(w[b], g) - 32;
      for (int t = 0; t < kTokens; ++t) {
        const BlockQ8_K& y = reinterpret_cast<const BlockQ8_K*>(a + t * a_stride)[b];
        isum[t] += scale * dot32(levels.lo, levels.hi, y.qs + 32 * g);
      }
    }
    const float dw = half_to_float(w[b].d);
    for (int t = 0; t < kTokens; ++t) {
      const float dy = reinterpret_cast<const BlockQ8_K*>(a + t * a_stride)[b].d;
      acc[t] = __builtin_fmaf(static_cast<float>(isum[t]), dw * dy, acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) out[t * out_stride] = acc[t];
}

// out[t * out_stride] = dot(w, activation row t) for kTokens rows: each weight block is
// unpacked once for all of them.
template <typename Block, int kTokens>
void legacy_tile(int64_t n_blocks, const Block* w, const uint8_t* a, size_t a_stride, float* out,
                 int64_t out_stride) {
  float acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    __builtin_prefetch(reinterpret_cast<const char*>(w + b) + 1024, 0, 3);
    const Levels levels = unpack(w[b]);
    for (int t = 0; t < kTokens; ++t) {
      const BlockQ8_0& y = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride)[b];
      const int32_t isum = dot32(levels.lo, levels.hi, y.qs);
      acc[t] = __builtin_fmaf(static_cast<float>(isum), levels.d * half_to_float(y.d), acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) out[t * out_stride] = acc[t];
}

// The lattice i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M) against
// Q8_K. A sub-block of 32 weights becomes signed bytes: its grid points with their signs
// (IQ1's grid holds -1, 0, 1 itself), each 16-weight half with its scale, and for IQ1
// the shift's sign per weight. Each half's exact sum times its scale adds into one
// integer per super-block (two for IQ1: the grid's and the shift's), then the reference's
// float steps (quants_iq_lattice.cc): sum = fma(d * y.d, total, sum), kFinal * sum at the
// end, with total = grid + 0.125 * shift for IQ1.
struct LatticeSubBlock {
  int8x16_t w[2];
  int32_t scale[2];
  int8x16_t shift[2];
};

// ±1 bytes for the 8 bits of b (-1 where a bit is set), and for a stored 7-bit pattern.
constexpr struct LatticeSigns {
  uint64_t bits[256];
  uint64_t stored[128];
  constexpr LatticeSigns() : bits(), stored() {
    for (uint32_t b = 0; b < 256; ++b) {
      for (int j = 0; j < 8; ++j) bits[b] |= static_cast<uint64_t>((b >> j) & 1 ? 0xff : 0x01) << (8 * j);
    }
    for (uint32_t i = 0; i < 128; ++i) stored[i] = bits[iq_sign_pattern(i)];
  }
} kLatticeSigns;

uint64_t load_u64(const void* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
uint32_t load_u32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
int8x16_t bytes16(uint64_t low, uint64_t high) { return vcombine_s8(vcreate_s8(low), vcreate_s8(high)); }
// Two grid rows of 4 bytes as one 8-byte word.
uint64_t rows4(const uint8_t* a, const uint8_t* b) { return load_u32(a) | uint64_t{load_u32(b)} << 32; }

// The XXS formats' 32-bit word of four stored sign patterns (7 bits each) and, in its top
// 4 bits, the sub-block's scale: the four ±1 words, and the scale 2s + 1.
int32_t xxs_signs(uint32_t word, uint64_t signs[4]) {
  for (int k = 0; k < 4; ++k) signs[k] = kLatticeSigns.stored[(word >> (7 * k)) & 127];
  return static_cast<int32_t>(2 * (word >> 28) + 1);
}

// Four 8-byte grid rows times four ±1 words; the halves' scales.
LatticeSubBlock signed_sub_block(const uint64_t grid[4], const uint64_t signs[4], int32_t low_scale,
                                 int32_t high_scale) {
  return {{vmulq_s8(bytes16(grid[0], grid[1]), bytes16(signs[0], signs[1])),
           vmulq_s8(bytes16(grid[2], grid[3]), bytes16(signs[2], signs[3]))},
          {low_scale, high_scale},
          {vdupq_n_s8(0), vdupq_n_s8(0)}};
}

struct Iq2XxsLattice : Iq2XxsFacts {
  static LatticeSubBlock sub_block(const Block& x, int ib) {
    const uint32_t a0 = load_u32(&x.qs[4 * ib]), a1 = load_u32(&x.qs[4 * ib + 2]);
    uint64_t grid[4], signs[4];
    for (int k = 0; k < 4; ++k) grid[k] = load_u64(kIq2XxsGrid[(a0 >> (8 * k)) & 0xff]);
    const int32_t scale = xxs_signs(a1, signs);
    return signed_sub_block(grid, signs, scale, scale);
  }
};

struct Iq2XsLattice : Iq2XsFacts {
  static LatticeSubBlock sub_block(const Block& x, int ib) {
    const uint16_t* q = x.qs + 4 * ib;
    uint64_t grid[4], signs[4];
    for (int k = 0; k < 4; ++k) {
      grid[k] = load_u64(kIq2XsGrid[q[k] & 511]);
      signs[k] = kLatticeSigns.stored[q[k] >> 9];
    }
    return signed_sub_block(grid, signs, 2 * (x.scales[ib] & 0xf) + 1, 2 * (x.scales[ib] >> 4) + 1);
  }
};

struct Iq2SLattice : Iq2SFacts {
  static LatticeSubBlock sub_block(const Block& x, int ib) {
    const uint8_t* q = x.qs + 4 * ib;
    const uint32_t h = x.qh[ib];
    uint64_t grid[4], signs[4];
    for (int k = 0; k < 4; ++k) {
      grid[k] = load_u64(kIq2SGrid[q[k] | ((h >> (2 * k)) & 3) << 8]);
      signs[k] = kLatticeSigns.bits[x.signs[4 * ib + k]];
    }
    return signed_sub_block(grid, signs, 2 * (x.scales[ib] & 0xf) + 1, 2 * (x.scales[ib] >> 4) + 1);
  }
};

struct Iq3XxsLattice : Iq3XxsFacts {
  static LatticeSubBlock sub_block(const Block& x, int ib) {
    const uint8_t* q = x.qs + 8 * ib;
    const uint32_t a1 = load_u32(x.scales_and_signs + 4 * ib);
    uint64_t grid[4], signs[4];
    for (int k = 0; k < 4; ++k) grid[k] = rows4(kIq3XxsGrid[q[2 * k]], kIq3XxsGrid[q[2 * k + 1]]);
    const int32_t scale = xxs_signs(a1, signs);
    return signed_sub_block(grid, signs, scale, scale);
  }
};

struct Iq3SLattice : Iq3SFacts {
  static LatticeSubBlock sub_block(const Block& x, int ib) {
    const uint8_t* q = x.qs + 8 * ib;
    const uint32_t h = x.qh[ib];
    auto row = [&](int k) { return kIq3SGrid[q[k] | ((h >> k) & 1) << 8]; };
    uint64_t grid[4], signs[4];
    for (int k = 0; k < 4; ++k) {
      grid[k] = rows4(row(2 * k), row(2 * k + 1));
      signs[k] = kLatticeSigns.bits[x.signs[4 * ib + k]];
    }
    const int32_t scale = static_cast<int32_t>(1 + 2 * ((x.scales[ib / 2] >> (4 * (ib % 2))) & 0xf));
    return signed_sub_block(grid, signs, scale, scale);
  }
};

// IQ1: the grid's -1, 0, 1 are the weights; row k's high index bits are the 3 at bit
// index_stride * k of h; shift_signs: the shift's ±1 words of the four rows.
LatticeSubBlock iq1_sub_block(const uint8_t* q, uint32_t h, int index_stride, int32_t low_scale, int32_t high_scale,
                              const uint64_t shift_signs[4]) {
  uint64_t grid[4];
  for (int k = 0; k < 4; ++k) grid[k] = load_u64(kIq1SGrid[q[k] | ((h >> (index_stride * k)) & 7) << 8]);
  return {{bytes16(grid[0], grid[1]), bytes16(grid[2], grid[3])},
          {low_scale, high_scale},
          {bytes16(shift_signs[0], shift_signs[1]), bytes16(shift_signs[2], shift_signs[3])}};
}

constexpr uint64_t kPlusOnes = 0x0101010101010101;

struct Iq1SLattice : Iq1SFacts {
  static LatticeSubBlock sub_block(const Block& x, int ib) {
    const uint32_t h = x.qh[ib];
    const uint64_t sign = h & 0x8000 ? ~uint64_t{0} : kPlusOnes;
    const uint64_t shift[4] = {sign, sign, sign, sign};
    const int32_t scale = static_cast<int32_t>(2 * ((h >> 12) & 7) + 1);
    return iq1_sub_block(x.qs + 4 * ib, h, 3, scale, scale, shift);
  }
};

struct Iq1MLattice : Iq1MFacts {
  static LatticeSubBlock sub_block(const Block& x, int ib) {
    const uint32_t h = x.qh[2 * ib] | static_cast<uint32_t>(x.qh[2 * ib + 1]) << 8;  // a nibble per row
    const uint32_t sc = x.scales[ib / 2] >> (6 * (ib % 2));
    uint64_t shift[4];
    for (int k = 0; k < 4; ++k) shift[k] = (h >> (4 * k + 3)) & 1 ? ~uint64_t{0} : kPlusOnes;
    return iq1_sub_block(x.qs + 4 * ib, h, 4, static_cast<int32_t>(2 * (sc & 7) + 1),
                         static_cast<int32_t>(2 * ((sc >> 3) & 7) + 1), shift);
  }
};

// sum over 16 lanes of a * b (exact).
int32_t sum16(int8x16_t a, int8x16_t b) { return vaddvq_s32(dot16(vdupq_n_s32(0), a, b)); }

template <typename Format, int kTokens>
void lattice_tile(int64_t n_blocks, const typename Format::Block* x, const uint8_t* a, size_t a_stride, float* out,
                  int64_t out_stride) {
  float sums[kTokens] = {};
  for (int64_t b = 0; b < n_blocks; ++b) {
    int32_t grid[kTokens] = {}, shift[kTokens] = {};
    for (int ib = 0; ib < kSuperBlockSize / 32; ++ib) {
      const LatticeSubBlock sb = Format::sub_block(x[b], ib);
      for (int t = 0; t < kTokens; ++t) {
        const int8_t* q = reinterpret_cast<const BlockQ8_K*>(a + t * a_stride)[b].qs + 32 * ib;
        const int8x16_t q0 = vld1q_s8(q), q1 = vld1q_s8(q + 16);
        grid[t] += sb.scale[0] * sum16(sb.w[0], q0) + sb.scale[1] * sum16(sb.w[1], q1);
        if constexpr (Format::kShifted) {
          shift[t] += sb.scale[0] * sum16(sb.shift[0], q0) + sb.scale[1] * sum16(sb.shift[1], q1);
        }
      }
    }
    const float dw = half_to_float(Format::scale_bits(x[b]));
    for (int t = 0; t < kTokens; ++t) {
      float total = static_cast<float>(grid[t]);
      if constexpr (Format::kShifted) total = total + 0.125f * static_cast<float>(shift[t]);
      sums[t] = __builtin_fmaf(dw * reinterpret_cast<const BlockQ8_K*>(a + t * a_stride)[b].d, total, sums[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) out[t * out_stride] = Format::kFinal * sums[t];
}

// TQ1_0 / TQ2_0 against Q8_K: the trits (0, 1, 2) times the activations, less the block's
// activation total (the weight is trit - 1); then the reference's float step
// sum += float(isum) * (d * y.d). TQ1_0's trit k of byte b is ((b * 3^k mod 256) * 3) >> 8:
// 1 from b * 3^k mod 256 = 86 on, 2 from 171 on.
template <typename Block>
constexpr bool kTernary = std::is_same_v<Block, BlockTQ1_0> || std::is_same_v<Block, BlockTQ2_0>;

int8x16_t top_trit(uint8x16_t m) {
  const uint8x16_t minus = vaddq_u8(vcgeq_u8(m, vdupq_n_u8(86)), vcgeq_u8(m, vdupq_n_u8(171)));  // 0, -1, -2
  return vreinterpretq_s8_u8(vsubq_u8(vdupq_n_u8(0), minus));
}

// The 256 trits in weight order, 16 per vector.
void block_trits(const BlockTQ1_0& x, int8x16_t t[16]) {
  const uint8x16_t head[2] = {vld1q_u8(x.qs), vld1q_u8(x.qs + 16)};
  const uint8x16_t tail = vld1q_u8(x.qs + 32);
  uint8x16_t power = vdupq_n_u8(1);
  for (int k = 0; k < 5; ++k, power = vmulq_u8(power, vdupq_n_u8(3))) {
    t[2 * k] = top_trit(vmulq_u8(head[0], power));      // weights 32k .. 32k + 15
    t[2 * k + 1] = top_trit(vmulq_u8(head[1], power));  // 32k + 16 .. 32k + 31
    t[10 + k] = top_trit(vmulq_u8(tail, power));        // 160 + 16k ..
  }
  // Weight 240 + 4k + j is trit k of qh[j]: dword k of the vector is qh times 3^k.
  static constexpr uint8_t kPowers[16] = {1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27};
  t[15] = top_trit(vmulq_u8(vreinterpretq_u8_u32(vdupq_n_u32(load_u32(x.qh))), vld1q_u8(kPowers)));
}

void block_trits(const BlockTQ2_0& x, int8x16_t t[16]) {
  for (int c = 0; c < 2; ++c) {  // byte j of half c: weights 128c + 32l + j in bits 2l
    const uint8x16_t q[2] = {vld1q_u8(x.qs + 32 * c), vld1q_u8(x.qs + 32 * c + 16)};
    for (int l = 0; l < 4; ++l) {
      for (int h = 0; h < 2; ++h) {
        t[8 * c + 2 * l + h] = vreinterpretq_s8_u8(vandq_u8(vshlq_u8(q[h], vdupq_n_s8(static_cast<int8_t>(-2 * l))),
                                                            vdupq_n_u8(3)));
      }
    }
  }
}

template <typename Block, int kTokens>
void ternary_tile(int64_t n_blocks, const Block* x, const uint8_t* a, size_t a_stride, float* out,
                  int64_t out_stride) {
  float sums[kTokens] = {};
  for (int64_t b = 0; b < n_blocks; ++b) {
    int8x16_t t[16];
    block_trits(x[b], t);
    const float dw = half_to_float(x[b].d);
    for (int r = 0; r < kTokens; ++r) {
      const BlockQ8_K& y = reinterpret_cast<const BlockQ8_K*>(a + r * a_stride)[b];
      int32x4_t acc = vdupq_n_s32(0);
      for (int i = 0; i < 16; ++i) acc = dot16(acc, t[i], vld1q_s8(y.qs + 16 * i));
      const int32_t total = vaddlvq_s16(vld1q_s16(y.bsums)) + vaddlvq_s16(vld1q_s16(y.bsums + 8));
      sums[r] += static_cast<float>(vaddvq_s32(acc) - total) * (dw * y.d);
    }
  }
  for (int r = 0; r < kTokens; ++r) out[r * out_stride] = sums[r];
}

// tiled_rows' Kind: a weight block type, or a lattice format (which names its Block).
template <typename Kind>
struct KindBlock {
  using type = Kind;
};
template <typename Kind>
  requires requires { typename Kind::Block; }
struct KindBlock<Kind> {
  using type = typename Kind::Block;
};
template <typename Kind>
constexpr bool kLatticeKind = requires { typename Kind::Block; };

template <typename Kind, int kTokens>
void block_tile(int64_t n_blocks, const typename KindBlock<Kind>::type* w, const uint8_t* a, size_t a_stride,
                float* out, int64_t out_stride) {
  if constexpr (kLatticeKind<Kind>) {
    lattice_tile<Kind, kTokens>(n_blocks, w, a, a_stride, out, out_stride);
  } else if constexpr (kTernary<Kind>) {
    ternary_tile<Kind, kTokens>(n_blocks, w, a, a_stride, out, out_stride);
  } else if constexpr (std::is_same_v<Kind, BlockIQ4_XS>) {
    iq4_xs_tile<kTokens>(n_blocks, w, a, a_stride, out, out_stride);
  } else if constexpr (kNibbleTable<Kind>) {
    nibble_table_tile<Kind, kTokens>(n_blocks, w, a, a_stride, out, out_stride);
  } else {
    legacy_tile<Kind, kTokens>(n_blocks, w, a, a_stride, out, out_stride);
  }
}

// The rows of the formats whose weight blocks are unpacked once for a tile of tokens.
template <typename Kind>
void tiled_rows(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows, float* out,
                int64_t out_stride) {
  using Block = typename KindBlock<Kind>::type;
  constexpr int kTile = 4;
  constexpr int64_t kBlockElements =
      kLatticeKind<Kind> || kTernary<Block> || std::is_same_v<Block, BlockIQ4_XS> ? kSuperBlockSize
                                                                                 : kLegacyBlockSize;
  const auto* weights = static_cast<const Block*>(w);
  const auto* rows = static_cast<const uint8_t*>(a);
  const int64_t n_blocks = n / kBlockElements;
  int64_t t = 0;
  for (; t + kTile <= n_a_rows; t += kTile) {
    block_tile<Kind, kTile>(n_blocks, weights, rows + t * a_stride, a_stride, out + t * out_stride, out_stride);
  }
  for (; t < n_a_rows; ++t) {
    block_tile<Kind, 1>(n_blocks, weights, rows + t * a_stride, a_stride, out + t * out_stride, out_stride);
  }
}

// Q4_K / Q5_K's 6-bit scales and minimums of the 8 sub-blocks.
void unpack_k4_scales(const uint8_t* packed, int32_t scale[8], int32_t min[8]) {
  for (int j = 0; j < 4; ++j) {
    scale[j] = packed[j] & 63;
    min[j] = packed[j + 4] & 63;
    scale[j + 4] = (packed[j + 8] & 0x0f) | ((packed[j] >> 6) << 4);
    min[j + 4] = (packed[j + 8] >> 4) | ((packed[j + 4] >> 6) << 4);
  }
}

int32_t k4_min_sum(const int32_t min[8], const BlockQ8_K& y) {
  int32_t m = 0;
  for (int g = 0; g < 16; ++g) m += static_cast<int32_t>(y.bsums[g]) * min[g / 2];
  return m;
}

// Q4_K (kFifthBits false) or Q5_K: chunk c (64 quants) holds sub-block 2c in the low
// nibbles of qs[32c ..] and 2c + 1 in the high ones; Q5_K adds 16 where bit j of qh[l]
// is set (element 32j + l).
template <bool kFifthBits, typename Block>
SuperBlockSums k4_sums(const Block& x, const BlockQ8_K& y) {
  int32_t scale[8], min[8];
  unpack_k4_scales(x.scales, scale, min);
  const uint8x16_t nibble = vdupq_n_u8(0x0f);
  uint8x16_t qh0 = vdupq_n_u8(0), qh1 = vdupq_n_u8(0);
  if constexpr (kFifthBits) {
    qh0 = vld1q_u8(x.qh);
    qh1 = vld1q_u8(x.qh + 16);
  }
  SuperBlockSums s;
  for (int c = 0; c < 4; ++c) {
    const uint8x16_t p0 = vld1q_u8(x.qs + 32 * c), p1 = vld1q_u8(x.qs + 32 * c + 16);
    uint8x16_t lo0 = vandq_u8(p0, nibble), lo1 = vandq_u8(p1, nibble);
    uint8x16_t hi0 = vshrq_n_u8(p0, 4), hi1 = vshrq_n_u8(p1, 4);
    if constexpr (kFifthBits) {
      const int8x16_t down_lo = vdupq_n_s8(static_cast<int8_t>(4 - 2 * c));  // bit 2c to bit 4
      const int8x16_t down_hi = vdupq_n_s8(static_cast<int8_t>(3 - 2 * c));  // bit 2c + 1 to bit 4
      const uint8x16_t bit4 = vdupq_n_u8(0x10);
      lo0 = vorrq_u8(lo0, vandq_u8(vshlq_u8(qh0, down_lo), bit4));
      lo1 = vorrq_u8(lo1, vandq_u8(vshlq_u8(qh1, down_lo), bit4));
      hi0 = vorrq_u8(hi0, vandq_u8(vshlq_u8(qh0, down_hi), bit4));
      hi1 = vorrq_u8(hi1, vandq_u8(vshlq_u8(qh1, down_hi), bit4));
    }
    const int32_t low = scale[2 * c] * dot32(vreinterpretq_s8_u8(lo0), vreinterpretq_s8_u8(lo1), y.qs + 64 * c);
    const int32_t high =
        scale[2 * c + 1] * dot32(vreinterpretq_s8_u8(hi0), vreinterpretq_s8_u8(hi1), y.qs + 64 * c + 32);
    const bool in_lo = kFifthBits ? c % 2 == 0 : c < 2;
    (in_lo ? s.t_lo : s.t_hi) += low + high;
  }
  s.m = k4_min_sum(min, y);
  return s;
}

// Q6_K: codes q in [0, 63] (level q - 32); element 128h + 32k + l of half h takes the low
// (k = 0, 1) or high (k = 2, 3) nibble of ql[64h + 32 (k % 2) + l] and bits 2k, 2k + 1 of
// qh[32h + l].
SuperBlockSums q6_sums(const BlockQ6_K& x, const BlockQ8_K& y) {
  const uint8x16_t nibble = vdupq_n_u8(0x0f), bits_4_5 = vdupq_n_u8(0x30);
  SuperBlockSums s;
  for (int h = 0; h < 2; ++h) {
    for (int part = 0; part < 2; ++part) {  // l in [16 part, 16 part + 16)
      const uint8x16_t ql0 = vld1q_u8(x.ql + 64 * h + 16 * part);
      const uint8x16_t ql1 = vld1q_u8(x.ql + 64 * h + 32 + 16 * part);
      const uint8x16_t qh = vld1q_u8(x.qh + 32 * h + 16 * part);
      const uint8x16_t q[4] = {
          vorrq_u8(vandq_u8(ql0, nibble), vandq_u8(vshlq_n_u8(qh, 4), bits_4_5)),
          vorrq_u8(vandq_u8(ql1, nibble), vandq_u8(vshlq_n_u8(qh, 2), bits_4_5)),
          vorrq_u8(vshrq_n_u8(ql0, 4), vandq_u8(qh, bits_4_5)),
          vorrq_u8(vshrq_n_u8(ql1, 4), vandq_u8(vshrq_n_u8(qh, 2), bits_4_5)),
      };
      for (int k = 0; k < 4; ++k) {
        const int group = 8 * h + 2 * k + part;  // 16 elements from 128h + 32k + 16 part
        const int32_t isum =
            vaddvq_s32(dot16(vdupq_n_s32(0), vreinterpretq_s8_u8(q[k]), vld1q_s8(y.qs + 128 * h + 32 * k + 16 * part)));
        (k % 2 == 0 ? s.t_lo : s.t_hi) += static_cast<int32_t>(x.scales[group]) * isum;
      }
    }
  }
  int32_t offset = 0;
  for (int g = 0; g < 16; ++g) offset += static_cast<int32_t>(x.scales[g]) * y.bsums[g];
  s.t_lo -= 32 * offset;
  return s;
}

struct KSums {
  static SuperBlockSums of(const BlockQ4_K& x, const BlockQ8_K& y) { return k4_sums<false>(x, y); }
  static SuperBlockSums of(const BlockQ5_K& x, const BlockQ8_K& y) { return k4_sums<true>(x, y); }
  static SuperBlockSums of(const BlockQ6_K& x, const BlockQ8_K& y) { return q6_sums(x, y); }
  static float half(uint16_t h) { return half_to_float(h); }
};

}  // namespace

// The entries simd_kernels.h declares, each one format's rows.
TM_DOT_ROWS_ENTRY(vec_dot_rows_q4_0_q8_0, tiled_rows<BlockQ4_0>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_q5_0_q8_0, tiled_rows<BlockQ5_0>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_q8_0_q8_0, tiled_rows<BlockQ8_0>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_iq4_nl_q8_0, tiled_rows<BlockIQ4_NL>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_mxfp4_q8_0, tiled_rows<BlockMXFP4>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_iq4_xs_q8_K, tiled_rows<BlockIQ4_XS>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_iq2_xxs_q8_K, tiled_rows<Iq2XxsLattice>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_iq2_xs_q8_K, tiled_rows<Iq2XsLattice>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_iq2_s_q8_K, tiled_rows<Iq2SLattice>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_iq3_xxs_q8_K, tiled_rows<Iq3XxsLattice>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_iq3_s_q8_K, tiled_rows<Iq3SLattice>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_iq1_s_q8_K, tiled_rows<Iq1SLattice>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_iq1_m_q8_K, tiled_rows<Iq1MLattice>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_tq1_0_q8_K, tiled_rows<BlockTQ1_0>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_tq2_0_q8_K, tiled_rows<BlockTQ2_0>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_q4_K_q8_K, kquant_rows<KSums, BlockQ4_K, 2048>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_q5_K_q8_K, kquant_rows<KSums, BlockQ5_K, 2048>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_q6_K_q8_K, kquant_rows<KSums, BlockQ6_K, 2048>)
