// Block layouts of the quantized GGUF tensor types, byte for byte as they sit in a file.
//
// Every quantized row is an array of blocks; a block holds `block_size` weights. Legacy
// types (Q4_0 … Q8_1) use blocks of 32, K-quants use super-blocks of 256 split into
// sub-blocks of 16 or 32 that carry their own small integer scales.
//
// Scales stored as `uint16_t` are IEEE half floats (see base/half.h). All multi-byte
// fields are little-endian, which is also the host order on every CPU we target.
//
// Notation in the diagrams: `q[i]` is the i-th quant of the block in element order;
// "lo"/"hi" are the low/high nibble (or bit field) of a byte.
#pragma once

#include <bit>
#include <cstdint>

namespace tokenmill::quant {

inline constexpr int kLegacyBlockSize = 32;  // QK4_0 … QK8_1
inline constexpr int kSuperBlockSize = 256;  // QK_K
inline constexpr int kKScaleBytes = 12;      // packed 6-bit scales of Q4_K / Q5_K

// ---------------------------------------------------------------------------------------
// Legacy formats: one f16 scale `d` (and a minimum `m` for the _1 variants) per 32 values.
//   _0 types: x = d * (q - offset)      _1 types: x = d * q + m
// Quants of elements j and j+16 share byte j: element j in the low nibble, j+16 in the
// high nibble.

// Q4_0, 18 bytes, x = d * (q - 8), q in [0, 15]
//   +------+-------------------------------------------+
//   | d:2  | qs[16]: lo = q[j], hi = q[j+16]           |
//   +------+-------------------------------------------+
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kLegacyBlockSize / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

// Q4_1, 20 bytes, x = d * q + m, q in [0, 15]
//   +------+------+------------------------------------+
//   | d:2  | m:2  | qs[16]: lo = q[j], hi = q[j+16]    |
//   +------+------+------------------------------------+
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kLegacyBlockSize / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

// Q5_0, 22 bytes, x = d * (q - 16), q in [0, 31]
//   +------+---------+--------------------------------------+
//   | d:2  | qh[4]   | qs[16]: low 4 bits, as in Q4_0       |
//   +------+---------+--------------------------------------+
//   qh read as one little-endian uint32: bit i is bit 4 of q[i] (i = 0..31).
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kLegacyBlockSize / 2];
};
static_assert(sizeof(BlockQ5_0) == 22);

// Q5_1, 24 bytes, x = d * q + m, q in [0, 31]; qh and qs as in Q5_0.
//   +------+------+---------+-------------------------------+
//   | d:2  | m:2  | qh[4]   | qs[16]                        |
//   +------+------+---------+-------------------------------+
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kLegacyBlockSize / 2];
};
static_assert(sizeof(BlockQ5_1) == 24);

// Q8_0, 34 bytes, x = d * q, q in [-127, 127]
//   +------+-----------------------------+
//   | d:2  | qs[32]: int8, in order      |
//   +------+-----------------------------+
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kLegacyBlockSize];
};
static_assert(sizeof(BlockQ8_0) == 34);

// Q8_1, 36 bytes: Q8_0 plus s = d * sum(q), so a dot product with a _1 weight block can
// add m * sum(activation) without touching the quants again. Activation-only type.
//   +------+------+-----------------------------+
//   | d:2  | s:2  | qs[32]: int8, in order      |
//   +------+------+-----------------------------+
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[kLegacyBlockSize];
};
static_assert(sizeof(BlockQ8_1) == 36);

// ---------------------------------------------------------------------------------------
// K-quants: 256 values per super-block. The 2/3/4/5-bit quant planes are laid out in
// chunks: Q2_K/Q3_K/Q6_K pack 128 elements per 32 bytes of 2-bit fields (byte l of a
// chunk holds elements l, l+32, l+64, l+96 at bit shifts 0, 2, 4, 6); Q4_K/Q5_K pack 64
// elements per 32 bytes of nibbles (lo = element l, hi = element l+32).

// Q2_K, 84 bytes. 16 sub-blocks of 16; x = d * sc * q - dmin * mn, q in [0, 3].
//   +--------------------------------+---------------------+------+---------+
//   | scales[16]: lo = sc, hi = mn   | qs[64]: 2-bit quants| d:2  | dmin:2  |
//   +--------------------------------+---------------------+------+---------+
//   qs: two chunks of 32 bytes; chunk c, byte l, shift 2k -> element 128c + 32k + l.
struct BlockQ2_K {
  uint8_t scales[kSuperBlockSize / 16];
  uint8_t qs[kSuperBlockSize / 4];
  uint16_t d;
  uint16_t dmin;
};
static_assert(sizeof(BlockQ2_K) == 84);

// Q3_K, 110 bytes. 16 sub-blocks of 16; x = d * (sc - 32) * (q - 4), q in [0, 7].
//   +-------------+-------------------+------------------+------+
//   | hmask[32]   | qs[64]: low 2 bits| scales[12]: 6-bit| d:2  |
//   +-------------+-------------------+------------------+------+
//   qs: low two bits of each quant, packed as in Q2_K.
//   hmask: bit 2 of q[i] is bit (i / 32) of hmask[i % 32].
//   scales (sixteen 6-bit values s0..s15):
//     bytes 0..7 : lo = low 4 bits of s0..s7,  hi = low 4 bits of s8..s15
//     bytes 8..11: byte 8+k holds the high 2 bits of s_k, s_{k+4}, s_{k+8}, s_{k+12}
//                  at shifts 0, 2, 4, 6.
struct BlockQ3_K {
  uint8_t hmask[kSuperBlockSize / 8];
  uint8_t qs[kSuperBlockSize / 4];
  uint8_t scales[12];
  uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110);

// Q4_K, 144 bytes. 8 sub-blocks of 32; x = d * sc * q - dmin * mn, q in [0, 15].
//   +------+---------+---------------------------+-------------------------+
//   | d:2  | dmin:2  | scales[12]: 6-bit sc, mn  | qs[128]: nibbles        |
//   +------+---------+---------------------------+-------------------------+
//   scales (eight 6-bit scales sc0..7 and mins mn0..7):
//     bytes 0..3 : sc0..3 in bits 0..5, high 2 bits of sc4..7 in bits 6..7
//     bytes 4..7 : mn0..3 in bits 0..5, high 2 bits of mn4..7 in bits 6..7
//     bytes 8..11: lo = low 4 bits of sc4..7, hi = low 4 bits of mn4..7
//   qs: four chunks of 32 bytes; chunk c, byte l -> lo = element 64c + l,
//       hi = element 64c + 32 + l.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kSuperBlockSize / 2];
};
static_assert(sizeof(BlockQ4_K) == 144);

// Q5_K, 176 bytes. As Q4_K with a fifth bit per quant, q in [0, 31].
//   +------+---------+-------------+-----------+-------------------------+
//   | d:2  | dmin:2  | scales[12]  | qh[32]    | qs[128]: low nibbles    |
//   +------+---------+-------------+-----------+-------------------------+
//   qh: bit 4 of q[i] is bit (i / 32) of qh[i % 32].
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kSuperBlockSize / 8];
  uint8_t qs[kSuperBlockSize / 2];
};
static_assert(sizeof(BlockQ5_K) == 176);

// Q6_K, 210 bytes. 16 sub-blocks of 16; x = d * sc * (q - 32), q in [0, 63],
// sc an int8.
//   +----------------------+----------------------+-----------------+------+
//   | ql[128]: low nibbles | qh[64]: high 2 bits  | scales[16]: i8  | d:2  |
//   +----------------------+----------------------+-----------------+------+
//   Two halves of 128 elements; half h uses ql[64h .. 64h+63], qh[32h .. 32h+31].
//   Within a half, for l in 0..31:
//     element l      : lo nibble of ql[l],      bits 0-1 of qh[l]
//     element l + 32 : lo nibble of ql[l + 32], bits 2-3 of qh[l]
//     element l + 64 : hi nibble of ql[l],      bits 4-5 of qh[l]
//     element l + 96 : hi nibble of ql[l + 32], bits 6-7 of qh[l]
struct BlockQ6_K {
  uint8_t ql[kSuperBlockSize / 2];
  uint8_t qh[kSuperBlockSize / 4];
  int8_t scales[kSuperBlockSize / 16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210);

// Q8_K, 292 bytes: the activation format of every K-quant dot product. A float scale
// (not f16) and the sum of each group of 16 quants, so the "- dmin * mn" term of a
// dot product needs only 16 multiplies per super-block.
//   +---------+-----------------------------+--------------------------+
//   | d:f32   | qs[256]: int8, in order     | bsums[16]: int16         |
//   +---------+-----------------------------+--------------------------+
struct BlockQ8_K {
  float d;
  int8_t qs[kSuperBlockSize];
  int16_t bsums[kSuperBlockSize / 16];
};
static_assert(sizeof(BlockQ8_K) == 292);

// ---------------------------------------------------------------------------------------
// Non-linear 4-bit formats: a 4-bit index q picks one of 16 fixed levels (kIq4Levels in
// quants_iq4.cc, denser near zero, from -127 to 113), scaled.

// IQ4_NL, 18 bytes, x = d * level[q]; quants laid out as in Q4_0
//   +------+-------------------------------------------+
//   | d:2  | qs[16]: lo = q[j], hi = q[j+16]           |
//   +------+-------------------------------------------+
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kLegacyBlockSize / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18);

// IQ4_XS, 136 bytes: 8 sub-blocks of 32, each with a 6-bit scale s_i,
// x = d * (s_i - 32) * level[q]
//   +------+------------+---------------+--------------------------------------------+
//   | d:2  | scales_h:2 | scales_l[4]   | qs[128]: 16 bytes per sub-block, as IQ4_NL |
//   +------+------------+---------------+--------------------------------------------+
//   s_i = (scales_l[i/2] >> 4*(i%2)) & 0xf | ((scales_h >> 2i) & 3) << 4
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kSuperBlockSize / 64];
  uint8_t qs[kSuperBlockSize / 2];
};
static_assert(sizeof(BlockIQ4_XS) == 136);

// s_g of an IQ4_XS block, 0 .. 63 (the stored value; the factor is s_g - 32).
inline int iq4_xs_scale(const BlockIQ4_XS& block, int g) {
  return ((block.scales_l[g / 2] >> (4 * (g % 2))) & 0xf) | (((block.scales_h >> (2 * g)) & 3) << 4);
}

// ---------------------------------------------------------------------------------------
// MXFP4 (the OCP microscaling format of gpt-oss's experts), 17 bytes: 32 E2M1 codes under
// one E8M0 exponent e, x = 2^(e - 128) * kMxfp4Levels[q]: the E2M1 values doubled, so
// that they are the integers 0, 1, 2, 3, 4, 6, 8, 12 and their negatives, and the
// scale halved to match. Quants laid out as in Q4_0.
//   +------+-------------------------------------------+
//   | e:1  | qs[16]: lo = q[j], hi = q[j+16]           |
//   +------+-------------------------------------------+
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[kLegacyBlockSize / 2];
};
static_assert(sizeof(BlockMXFP4) == 17);

// 2^(e - 128) as a float, exactly (e = 0 and 1 give subnormals; e = 255 is 2^127: no
// NaN, as GGUF readers decode it).
inline float mxfp4_scale(uint8_t e) {
  const uint32_t bits = e < 2 ? uint32_t{0x00200000} << e : static_cast<uint32_t>(e - 1) << 23;
  return std::bit_cast<float>(bits);
}

// ---------------------------------------------------------------------------------------
// Lattice formats (IQ1_S … IQ3_S): each group of 4 or 8 weights is one point of a fixed
// grid (quant/iq_grids.h), named by an index, with the signs apart and one small integer
// scale per 16 or 32 weights. Super-blocks of 256; d is an f16 super-block scale.
// ksigns (IQ2_XXS, IQ2_XS, IQ3_XXS): 7 stored sign bits of a group of 8; the 8th makes
// the count of minus signs even (iq_sign_pattern).

// IQ2_XXS, 66 bytes: 8 sub-blocks of 32, each two 32-bit words a0, a1:
//   a0's bytes: 4 indices into the 256-point grid (8 weights each)
//   a1: bits 7l..7l+6 the sign pattern of group l (l < 4), bits 28..31 the scale s
//   x = d * (0.5 + s) / 4 * grid * sign
struct BlockIQ2_XXS {
  uint16_t d;
  uint16_t qs[kSuperBlockSize / 8];
};
static_assert(sizeof(BlockIQ2_XXS) == 66);

// IQ2_XS, 74 bytes: 32 groups of 8, qs[g] = 9-bit index into the 512-point grid | 7 sign
// bits << 9; scales: one nibble per 16 weights (low nibble first).
//   x = d * (0.5 + s) / 4 * grid * sign
struct BlockIQ2_XS {
  uint16_t d;
  uint16_t qs[kSuperBlockSize / 8];
  uint8_t scales[kSuperBlockSize / 32];
};
static_assert(sizeof(BlockIQ2_XS) == 74);

// IQ2_S, 82 bytes: 32 groups of 8, index = qs[g] | ((qh[g/4] >> 2(g%4)) & 3) << 8 into the
// 1024-point grid; signs: one bit per weight, in order; scales as IQ2_XS.
struct BlockIQ2_S {
  uint16_t d;
  uint8_t qs[kSuperBlockSize / 8];
  uint8_t signs[kSuperBlockSize / 8];
  uint8_t qh[kSuperBlockSize / 32];
  uint8_t scales[kSuperBlockSize / 32];
};
static_assert(sizeof(BlockIQ2_S) == 82);

// IQ3_XXS, 98 bytes: 64 indices into the 256-point grid (4 weights each), then one 32-bit
// word per sub-block of 32 with IQ2_XXS's a1 layout (4 sign patterns, scale in the top 4
// bits). x = d * (0.5 + s) / 2 * grid * sign
struct BlockIQ3_XXS {
  uint16_t d;
  uint8_t qs[kSuperBlockSize / 4];
  uint8_t scales_and_signs[kSuperBlockSize / 8];
};
static_assert(sizeof(BlockIQ3_XXS) == 98);

// IQ3_S, 110 bytes: 64 indices into the 512-point grid, index = qs[i] | ((qh[i/8] >> i%8) & 1) << 8;
// signs one bit per weight; scales one nibble per 32 weights. x = d * (1 + 2s) * grid * sign
struct BlockIQ3_S {
  uint16_t d;
  uint8_t qs[kSuperBlockSize / 4];
  uint8_t qh[kSuperBlockSize / 32];
  uint8_t signs[kSuperBlockSize / 8];
  uint8_t scales[kSuperBlockSize / 64];
};
static_assert(sizeof(BlockIQ3_S) == 110);

// IQ1_S, 50 bytes: 32 groups of 8 over the 2048-point grid of -1/0/1 values; per sub-block
// i of 32, qh[i]: bits 3l..3l+2 the high index bits of group l, bits 12..14 the scale s,
// bit 15 the sign of the shift delta (1/8). x = d * (2s + 1) * (grid ± 1/8)
struct BlockIQ1_S {
  uint16_t d;
  uint8_t qs[kSuperBlockSize / 8];
  uint16_t qh[kSuperBlockSize / 32];
};
static_assert(sizeof(BlockIQ1_S) == 50);

// IQ1_M, 56 bytes: IQ1_S's grid; qh: one nibble per group (3 high index bits, the delta's
// sign in bit 3); scales: four 16-bit words, each holding 4 three-bit scales (one per 16
// weights) in bits 0..11, and in bits 12..15 a quarter of the f16 super-block scale d.
struct BlockIQ1_M {
  uint8_t qs[kSuperBlockSize / 8];
  uint8_t qh[kSuperBlockSize / 16];
  uint16_t scales[kSuperBlockSize / 64];
};
static_assert(sizeof(BlockIQ1_M) == 56);

// The f16 bits of an IQ1_M block's d.
inline uint16_t iq1_m_scale_bits(const BlockIQ1_M& block) {
  return static_cast<uint16_t>((block.scales[0] >> 12) | ((block.scales[1] >> 8) & 0x00f0) |
                               ((block.scales[2] >> 4) & 0x0f00) | (block.scales[3] & 0xf000));
}

// ---------------------------------------------------------------------------------------
// Ternary formats (BitNet-style weights -1, 0, 1 under one f16 scale per 256), x = d * t.

// TQ1_0, 54 bytes: five trits per byte in qs (240 weights), four per byte in qh (16).
// A byte b holds trits as the fraction b / 256 in base 3: trit k is the top base-3 digit
// of (b * 3^k mod 256), i.e. ((uint8_t)(b * 3^k) * 3) >> 8. Weights in order: qs[0..31]
// give 5 runs of 32 (digit k, byte j -> 32k + j), qs[32..47] 5 runs of 16 (160 + 16k + j),
// qh 4 runs of 4 (240 + 4k + j).
struct BlockTQ1_0 {
  uint8_t qs[48];
  uint8_t qh[4];
  uint16_t d;
};
static_assert(sizeof(BlockTQ1_0) == 54);

// TQ2_0, 66 bytes: 2 bits per weight, t = q - 1; byte j of each 32-byte half c holds
// weights 128c + 32l + j in bits 2l..2l+1.
struct BlockTQ2_0 {
  uint8_t qs[kSuperBlockSize / 4];
  uint16_t d;
};
static_assert(sizeof(BlockTQ2_0) == 66);

}  // namespace tokenmill::quant
