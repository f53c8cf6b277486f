// The Q4_K, Q5_K, Q6_K and IQ4_XS kernels on packed 16-row panels (quant/panel_layout.h), written
// once for every x86 vector width. The including file defines, inside an anonymous
// namespace, the vector type and its primitives:
//
//   struct V {
//     using I = ...; using F = ...;     // integer and float vectors of kLanes 32-bit lanes
//     static constexpr int kLanes;      // weight rows per pass: 16 (AVX-512) or 8 (AVX2)
//     static constexpr int kTokenTile;  // tokens whose sums stay in registers together
//     static I load(const uint8_t* p);  // kLanes dwords
//     static I broadcast4(const int8_t* p);  // the dword at p in every lane, from memory
//     static I table16(const uint8_t* t);     // t[0..15] in every 128-bit lane
//     static I lookup16(I table, I index);    // each byte: table[index & 15] of its lane (vpshufb)
//     static I abs8(I a); static I sign8(I a, I b);  // per byte: |a|; a with b's sign (0 where b is 0)
//     static F load_f16(const uint8_t* p);  // kLanes F16 values as floats
//     static F f16_low(I x);            // each lane's low 16 bits, an F16, as a float
//     // Sub-block sums: part = dot4(part, u, s) adds the u8 * s8 products of each lane's
//     // four bytes to `part`; scale_sum(part, scale_operand(sc)) is sc times the sum of
//     // `part` as int32 lanes. With kInt16Sums, part holds int16 pairs (vpmaddubsw sums)
//     // and takes at most Format::kInt16Group dot4s before scale_sum (vpmaddwd against
//     // (sc, sc)); without, part is int32 (vpdpbusd) and scale_sum a vpmulld.
//     static constexpr bool kInt16Sums;
//     static I dot4(I part, I u, I s);
//     static I scale_operand(I sc);
//     static I scale_sum(I part, I scale);
//     static I dot2(I acc, I a, I b);   // acc + the sums of two s16 * s16 products per lane
//     static void store(float* out, F x, int n);  // the first n lanes
//     static F load_ps(const float* p);  // kLanes floats
//     static void fold_max(F x, int64_t first_column, RunningMax& m);  // see RunningMax
//     ... and the lane-wise and_, or_, add, sub, srli, slli, srai, set1_8, set1_32,
//     zero, cvt, fma, fnmadd, mul, set1_ps
//   };
//
// (and includes quant/panel_layout.h), then includes this body there, so each copy has
// internal linkage (x86_helpers.h says why). Every primitive is exact: vpmaddubsw's int16 pair sums cannot saturate (codes are
// at most 63, activations at least -128: a pair is at most 2 * 63 * 128 in magnitude), and
// kInt16Group pair sums of a format's codes stay below 2^15.
//
// A packed super-block of 16 rows: 64-byte group i, lane r = dword i of row r's block
// (then, Q6_K, the 16 rows' d). A pass takes kLanes rows: with 8 lanes the first pass
// reads the first 32 bytes of every group (rows 0-7), the second the last 32 (rows 8-15).
//
// Per (row, token) and super-block everything up to the float steps is an exact integer:
// T = sum_j sc_j * isum_j (isum_j = sum of code * a over sub-block j) split in two halves
// T_lo, T_hi by sub-block (Format::kSubBlockOrder), and for Q4_K / Q5_K M = sum_j mn_j *
// (a's sum over sub-block j); Q6_K folds its "- 32" into T_lo. The float steps, per
// super-block in this order (Accumulator):
//   acc = fnmadd(float(M), dmin * y.d, acc)     (Q4_K, Q5_K)
//   acc = fma(float(T_lo), d * y.d, acc)
//   acc = fma(float(T_hi), d * y.d, acc)
// IQ4_XS (kOneTotal) takes one step, acc = fma(float(T), d * y.d, acc), as its reference.
// Every path of every width computes these integers and steps, so a (row, token) result
// has the same bits on AVX2 and AVX-512, alone or in any batch.

// A packed super-block's parts besides the codes, lane r for row r of the pass: sources =
// what Format::scale(h, j) derives sub-block j's scale from (as int32; V::scale_operand
// makes it what scale_sum takes), pairs[i] = the int16 pair that the token's pairs[i]
// multiply (the min terms or Q6_K's -32 offsets), d / dmin = the row's scales as floats.
// The scales are derived where they are used, not held: held, a format's eight or sixteen
// scale vectors beside kTokenTile tokens' sums and parts spill the registers.
// (A format may read its scales from the pass's dwords instead: `dwords`, no sources.)
template <int kSources, int kPairs>
struct Header {
  typename V::F d, dmin;
  typename V::I sources[kSources > 0 ? kSources : 1];
  typename V::I pairs[kPairs > 0 ? kPairs : 1];
  const uint8_t* dwords;
};

// The dwords of pass `half` of a packed super-block start at `block + half * kLanes * 4`.
__attribute__((always_inline)) inline const uint8_t* pass_dwords(const uint8_t* block, int half) {
  return block + half * V::kLanes * 4;
}

// Bytes i and i + 1 of every int32 lane as an int16 pair (zero-extended).
__attribute__((always_inline)) inline typename V::I byte_pair(typename V::I v, int i) {
  const typename V::I low = V::and_(V::srli(v, 8 * i), V::set1_32(0xff));
  const typename V::I high = V::and_(V::srli(v, 8 * i + 8), V::set1_32(0xff));
  return V::or_(low, V::slli(high, 16));
}

// Q4_K / Q5_K: the packed head (dword 0: d, dmin) and scales (dwords 1..3: words w0 w1
// w2 of the 12 packed bytes, read as
//   sc0..3 = w0 & 0x3f..   sc4..7 = (w2 & 0x0f..) | ((w0 >> 2) & 0x30..)
//   mn0..3 = w1 & 0x3f..   mn4..7 = ((w2 >> 4) & 0x0f..) | ((w1 >> 2) & 0x30..)).
__attribute__((always_inline)) inline Header<2, 4> k4_header(const uint8_t* p) {
  using I = typename V::I;
  Header<2, 4> h;
  h.dwords = p;
  const I head = V::load(p);
  h.d = V::f16_low(head);
  h.dmin = V::f16_low(V::srli(head, 16));
  const I w0 = V::load(p + 64), w1 = V::load(p + 128), w2 = V::load(p + 192);
  const I six_bits = V::set1_8(0x3f), low_nibble = V::set1_8(0x0f), bits_4_5 = V::set1_8(0x30);
  h.sources[0] = V::and_(w0, six_bits);                                                     // sc0..3
  h.sources[1] = V::or_(V::and_(w2, low_nibble), V::and_(V::srli(w0, 2), bits_4_5));        // sc4..7
  const I mn_0_3 = V::and_(w1, six_bits);
  const I mn_4_7 = V::or_(V::and_(V::srli(w2, 4), low_nibble), V::and_(V::srli(w1, 2), bits_4_5));
  h.pairs[0] = byte_pair(mn_0_3, 0);
  h.pairs[1] = byte_pair(mn_0_3, 2);
  h.pairs[2] = byte_pair(mn_4_7, 0);
  h.pairs[3] = byte_pair(mn_4_7, 2);
  return h;
}

// Sub-block j's scale (j < 8) from k4_header's sources: byte j % 4 of source j / 4.
__attribute__((always_inline)) inline typename V::I k4_scale(const Header<2, 4>& h, int j) {
  return V::and_(V::srli(h.sources[j / 4], 8 * (j % 4)), V::set1_32(0xff));
}

// Q4_K / Q5_K code vector i (sub-block j = i / 8, dword k = i % 8) from the nibbles at
// packed dword `qs` on: 32-byte chunk m = j / 2 holds sub-block 2m in its low nibbles and
// 2m + 1 in its high ones.
__attribute__((always_inline)) inline typename V::I k4_nibbles(const uint8_t* p, int qs, int i) {
  const int j = i / 8, k = i % 8;
  const typename V::I packed = V::load(p + 64 * (qs + 8 * (j / 2) + k));
  return V::and_(j % 2 == 0 ? packed : V::srli(packed, 4), V::set1_8(0x0f));
}

// Q4_K / Q5_K tokens: pairs[i] = (s_2i, s_2i+1) as int16, s_j = the sum of sub-block j's
// 32 quants (|s_j| <= 32 * 128).
inline void k4_token_pairs(const BlockQ8_K& y, int32_t* pairs) {
  for (int i = 0; i < 4; ++i) {
    const int s0 = y.bsums[4 * i] + y.bsums[4 * i + 1], s1 = y.bsums[4 * i + 2] + y.bsums[4 * i + 3];
    pairs[i] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(s0)) |
                                    (static_cast<uint32_t>(static_cast<uint16_t>(s1)) << 16));
  }
}

// Formats: kSubBlocks, kDwords (4-code dwords per sub-block), kPairs, kHasMin, kOneTotal
// (T in one float step, not two halves), kSignedCodes (codes are signed bytes: the body
// takes their magnitudes against quants carrying their signs), kSubBlockOrder (T_lo's
// sub-blocks, then T_hi's), token_pairs(y, pairs) (the token's int16 pairs that the
// header's pairs multiply), header(block, half) and code(block, half, i): pass half's code
// vector i, lane r = codes 4i .. 4i + 3 of its row r (element order; unsigned bytes unless
// kSignedCodes).

// The constants every format states, in the order the comment above gives them.
template <typename BlockType, int kSubBlockCount, int kDwordCount, int kPairCount, bool kMin, int kInt16GroupSize,
          bool kOneTotalStep = false, bool kSigned = false>
struct PackedShape {
  using Block = BlockType;
  static constexpr int kSubBlocks = kSubBlockCount;
  static constexpr int kDwords = kDwordCount;
  static constexpr int kPairs = kPairCount;
  static constexpr bool kHasMin = kMin;
  static constexpr bool kOneTotal = kOneTotalStep;
  static constexpr bool kSignedCodes = kSigned;
  static constexpr int kInt16Group = kInt16GroupSize;
};

// What Q4_K and Q5_K share: eight sub-blocks of 32 with 6-bit scales and minima.
template <typename BlockType, int kInt16GroupSize>
struct K4Format : PackedShape<BlockType, 8, 8, 4, true, kInt16GroupSize> {
  using Base = PackedShape<BlockType, 8, 8, 4, true, kInt16GroupSize>;
  using Base::kPairs, Base::kSubBlocks;

  static void token_pairs(const BlockQ8_K& y, int32_t* pairs) { k4_token_pairs(y, pairs); }
  __attribute__((always_inline)) static Header<2, kPairs> header(const uint8_t* block, int half) {
    return k4_header(pass_dwords(block, half));
  }
  __attribute__((always_inline)) static typename V::I scale(const Header<2, kPairs>& h, int j) { return k4_scale(h, j); }
};

struct PackedQ4K : K4Format<BlockQ4_K, 8> {  // kInt16Group: 8 * 2 * 15 * 128 < 2^15
  static constexpr int kSubBlockOrder[kSubBlocks] = {0, 1, 2, 3, 4, 5, 6, 7};

  __attribute__((always_inline)) static typename V::I code(const uint8_t* block, int half, int i) {
    return k4_nibbles(pass_dwords(block, half), offsetof(Block, qs) / 4, i);
  }
};

// Q5_K: Q4_K's nibbles plus 16 where bit j of the qh byte is set: qh dword k holds the
// fifth bits of dword k of every sub-block.
struct PackedQ5K : K4Format<BlockQ5_K, 4> {  // kInt16Group: 4 * 2 * 31 * 128 < 2^15
  static constexpr int kSubBlockOrder[kSubBlocks] = {0, 1, 4, 5, 2, 3, 6, 7};

  __attribute__((always_inline)) static typename V::I code(const uint8_t* block, int half, int i) {
    const uint8_t* p = pass_dwords(block, half);
    const int j = i / 8, k = i % 8;
    const typename V::I qh = V::load(p + 64 * (offsetof(Block, qh) / 4 + k));
    const typename V::I bit = j < 4 ? V::slli(qh, 4 - j) : V::srli(qh, j - 4);  // bit j -> bit 4
    return V::or_(k4_nibbles(p, offsetof(Block, qs) / 4, i), V::and_(bit, V::set1_8(0x10)));
  }
};

// Q6_K: codes q in [0, 63], level q - 32; sixteen int8 scales of 16 quants each.
struct PackedQ6K : PackedShape<BlockQ6_K, 16, 4, 8, false, 2> {  // kInt16Group: 2 * 2 * 63 * 128 < 2^15
  // T_lo (with every sub-block's -32 term), then T_hi: bytes 0..31 of the row kernels'
  // 64-quant steps are sub-blocks j with bit 1 of j clear.
  static constexpr int kSubBlockOrder[kSubBlocks] = {0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15};

  // The token's group sums as they are, pairs (bsums_2i, bsums_2i+1).
  static void token_pairs(const BlockQ8_K& y, int32_t* pairs) { std::memcpy(pairs, y.bsums, sizeof y.bsums); }

  // Element 128h + 32g + 4k .. + 3 (h, g, k < 2, 4, 8) is code 32h + 8g + k: its low four
  // bits are nibble g / 2 of ql[64h + 32 (g % 2) + 4k ..], its high two bits 2g, 2g + 1
  // of qh[32h + 4k ..] (blocks.h).
  __attribute__((always_inline)) static typename V::I code(const uint8_t* block, int half, int i) {
    const uint8_t* p = pass_dwords(block, half);
    const int h = i / 32, g = i % 32 / 8, k = i % 8;
    const typename V::I ql = V::load(p + 64 * ((offsetof(Block, ql) + 64 * h + 32 * (g % 2)) / 4 + k));
    const typename V::I qh = V::load(p + 64 * ((offsetof(Block, qh) + 32 * h) / 4 + k));
    const typename V::I low = V::and_(g < 2 ? ql : V::srli(ql, 4), V::set1_8(0x0f));
    const typename V::I high = g < 2 ? V::slli(qh, 4 - 2 * g) : V::srli(qh, 2 * g - 4);  // bits 2g, 2g+1 -> 4, 5
    return V::or_(low, V::and_(high, V::set1_8(0x30)));
  }
  // Read from the block where used (16 scale vectors; the registers are the tokens'): lane r
  // of scale dword q = scales 4q .. 4q + 3 of row r (signed bytes).
  __attribute__((always_inline)) static typename V::I scale(const Header<0, kPairs>& h, int j) {
    const typename V::I packed = V::load(h.dwords + 64 * (offsetof(Block, scales) / 4 + j / 4));
    return V::srai(V::slli(packed, 24 - 8 * (j % 4)), 24);
  }
  __attribute__((always_inline)) static Header<0, kPairs> header(const uint8_t* block, int half) {
    using I = typename V::I;
    Header<0, kPairs> h;
    h.dwords = pass_dwords(block, half);
    // The -32 of every level: pairs (-32 sc_2i, -32 sc_2i+1) against the token's bsums.
    for (int i = 0; i < 8; ++i) {
      const I low = V::sub(V::zero(), V::slli(scale(h, 2 * i), 5));
      const I high = V::sub(V::zero(), V::slli(scale(h, 2 * i + 1), 5));
      h.pairs[i] = V::or_(V::and_(low, V::set1_32(0xffff)), V::slli(high, 16));
    }
    static_assert(offsetof(Block, d) == sizeof(Block) / 4 * 4, "d is the part after the whole dwords");
    h.d = V::load_f16(block + kPanelRows * offsetof(Block, d) + half * V::kLanes * 2);
    h.dmin = V::set1_ps(0.0f);
    return h;
  }
};

// IQ4_XS: 4-bit indices into 16 non-uniform levels (-127 .. 113), eight sub-blocks of 32
// with 6-bit scales (stored s, factor s - 32) and no minimum. The reference fuses each
// super-block's whole T in one step (kOneTotal), not in two halves. Two forms of the codes:
// - int32 sums (vpdpbusd, AVX-512): the levels plus 128 (1 .. 241, unsigned), the -128 of
//   every one taken off T through the token's sub-block sums: pairs (-128 sc_2i,
//   -128 sc_2i+1) against (s_2i, s_2i+1);
// - int16 pair sums (vpmaddubsw, AVX2), where 241 * 127 would saturate: the signed levels
//   (kSignedCodes: the body multiplies their magnitudes by the token's quants carrying
//   their signs), no pair terms, and each sub-block's pair sums scaled at once
//   (kInt16Group 1: a pair is at most 2 * 127 * 127 < 2^15).
struct PackedIQ4XS : PackedShape<BlockIQ4_XS, 8, 8, V::kInt16Sums ? 0 : 4, false, 1, true, V::kInt16Sums> {
  static constexpr int kSubBlockOrder[kSubBlocks] = {0, 1, 2, 3, 4, 5, 6, 7};
  static constexpr uint8_t kCodes[16] = {1, 24, 45, 63, 79, 93, 106, 118, 129, 141, 153, 166, 181, 197, 217, 241};
  // The signed levels' bytes: -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113.
  static constexpr uint8_t kLevels[16] = {0x81, 0x98, 0xad, 0xbf, 0xcf, 0xdd, 0xea, 0xf6,
                                          0x01, 0x0d, 0x19, 0x26, 0x35, 0x45, 0x59, 0x71};

  static void token_pairs(const BlockQ8_K& y, int32_t* pairs) { k4_token_pairs(y, pairs); }
  // Dword 0 of a block: d, then scales_h (bits 2j, 2j + 1: the high bits of s_j); dword 1:
  // scales_l (bits 4j .. 4j + 3: the low bits of s_j).
  // Sources: dword 0 (d, scales_h), dword 1 (scales_l); s_j = the low bits | the high bits << 4.
  __attribute__((always_inline)) static typename V::I scale(const Header<2, kPairs>& h, int j) {
    const typename V::I stored = V::or_(V::and_(V::srli(h.sources[1], 4 * j), V::set1_32(0x0f)),
                                        V::slli(V::and_(V::srli(h.sources[0], 16 + 2 * j), V::set1_32(3)), 4));
    return V::sub(stored, V::set1_32(32));
  }
  __attribute__((always_inline)) static Header<2, kPairs> header(const uint8_t* block, int half) {
    using I = typename V::I;
    const uint8_t* p = pass_dwords(block, half);
    Header<2, kPairs> h;
    h.dwords = p;
    h.sources[0] = V::load(p);
    h.sources[1] = V::load(p + 64);
    h.d = V::f16_low(h.sources[0]);
    h.dmin = V::set1_ps(0.0f);
    for (int i = 0; i < kPairs; ++i) {  // none with signed codes
      const I lo = V::sub(V::zero(), V::slli(scale(h, 2 * i), 7));
      const I hi = V::sub(V::zero(), V::slli(scale(h, 2 * i + 1), 7));
      h.pairs[i] = V::or_(V::and_(lo, V::set1_32(0xffff)), V::slli(hi, 16));
    }
    return h;
  }
  // Sub-block j's 16 qs bytes hold its elements 0-15 in their low nibbles and 16-31 in
  // their high ones: code dword k < 4 is low nibbles of qs dword 4j + k, k >= 4 the high
  // nibbles of qs dword 4j + k - 4.
  __attribute__((always_inline)) static typename V::I code(const uint8_t* block, int half, int i) {
    const uint8_t* p = pass_dwords(block, half);
    const int j = i / 8, k = i % 8;
    const typename V::I packed = V::load(p + 64 * (offsetof(Block, qs) / 4 + 4 * j + k % 4));
    const typename V::I index = V::and_(k < 4 ? packed : V::srli(packed, 4), V::set1_8(0x0f));
    return V::lookup16(V::table16(kSignedCodes ? kLevels : kCodes), index);
  }
};

// The float steps (see the top of the file): per (row, token) one float sum, and per
// super-block first its minimum term, then T's two halves.
struct Accumulator {
  typename V::F sum = V::set1_ps(0.0f);

  __attribute__((always_inline)) void add_min(typename V::I m, typename V::F dmin, float token_d) {
    sum = V::fnmadd(V::cvt(m), V::mul(dmin, V::set1_ps(token_d)), sum);
  }
  __attribute__((always_inline)) void add_total(typename V::I t_lo, typename V::I t_hi, typename V::F d,
                                                float token_d) {
    add_half(t_lo, d, token_d);
    add_half(t_hi, d, token_d);
  }
  // One of add_total's two steps, T_lo's first: the panel path takes T_lo's as soon as
  // T_lo is complete (the same float operations in the same order).
  __attribute__((always_inline)) void add_half(typename V::I t, typename V::F d, float token_d) {
    sum = V::fma(V::cvt(t), V::mul(d, V::set1_ps(token_d)), sum);
  }
};

// One pass's rows of one packed super-block against kTokens staged tokens, into acc.
template <typename Format, int kTokens>
__attribute__((always_inline)) inline void dot_packed_block(const uint8_t* block, int half, const int8_t* q,
                                                            const TokenBlock* meta, Accumulator* acc) {
  using I = typename V::I;
  // The passes of one super-block read the same token quants: left visible, the compiler
  // hoists their 64 addresses out of the pass loop and spills them to the stack.
  asm("" : "+r"(q));
  auto p = Format::header(block, half);
  I total[kTokens];
  for (int t = 0; t < kTokens; ++t) total[t] = V::zero();
  for (int i = 0; i < Format::kPairs; ++i) {
    for (int t = 0; t < kTokens; ++t) total[t] = V::dot2(total[t], p.pairs[i], V::set1_32(meta[t].pairs[i]));
  }
  if constexpr (Format::kHasMin) {  // that was M; T_lo starts from zero (Q6_K: from its -32 terms)
    for (int t = 0; t < kTokens; ++t) {
      acc[t].add_min(total[t], p.dmin, meta[t].d);
      total[t] = V::zero();
    }
  }
  // Opaque from here in a tile of several tokens: the scales the pairs were made of are
  // derived again where they are used, not kept alive from the header (see Header).
  if constexpr (kTokens > 2) {
    for (auto& source : p.sources) asm("" : "+v"(source));
    asm("" : "+r"(p.dwords));
  }
  // T_lo's sub-blocks, then T_hi's; kTokens independent dot4 chains in flight.
  // (Unrolled: the chains must stay in registers. T_lo goes into the sums as soon as it
  // is complete: kept to the end, 8 tokens' totals, sub-block sums, T_lo's and sums
  // needed all 32 registers, and the sums were spilled to the stack.)
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 8
    for (int s = 0; s < Format::kSubBlocks / 2; ++s) {
      const int j = Format::kSubBlockOrder[h * Format::kSubBlocks / 2 + s];
      const I scale = V::scale_operand(Format::scale(p, j));
      constexpr int kGroup = V::kInt16Sums ? Format::kInt16Group : Format::kDwords;
      I part[kTokens];
      for (int t = 0; t < kTokens; ++t) part[t] = V::zero();
#pragma GCC unroll 8
      for (int k = 0; k < Format::kDwords; ++k) {
        const int dword = j * Format::kDwords + k;
        const I codes = Format::code(block, half, dword);
        const I magnitudes = Format::kSignedCodes ? V::abs8(codes) : codes;
        for (int t = 0; t < kTokens; ++t) {
          I quants = V::broadcast4(q + t * kSuperBlockSize + 4 * dword);
          if constexpr (Format::kSignedCodes) quants = V::sign8(quants, codes);
          part[t] = V::dot4(part[t], magnitudes, quants);
        }
        if ((k + 1) % kGroup == 0) {
          for (int t = 0; t < kTokens; ++t) {
            total[t] = V::add(total[t], V::scale_sum(part[t], scale));
            // Here, not later, in a tile of several tokens: the integer sums may be
            // reassociated, and deferred they keep every sub-block's parts alive (spilled
            // to the stack).
            if constexpr (kTokens > 2) asm("" : "+v"(total[t]));
            part[t] = V::zero();
          }
        }
      }
    }
    if (!Format::kOneTotal || h == 1) {
      for (int t = 0; t < kTokens; ++t) {
        acc[t].add_half(total[t], p.d, meta[t].d);
        total[t] = V::zero();
      }
    }
  }
}

// Up to this many tokens, a panel of several passes (8 lanes) runs every pass on a
// super-block before the next one, so each 64-byte line is used whole while it is in L1;
// more tokens run pass by pass over the whole panel, whose accumulators would not fit the
// registers beside each other. Each lane's operations are the same in either order.
constexpr int kInterleavedPassTokens = 2;

// A packed panel's super-blocks first_block .. first_block + n_blocks - 1 against kTokens
// staged tokens: out[t * out_stride + r] for its first n_rows rows (out may be null), and
// with row_max each token's results folded into row_max[t] as columns first_column ...
// (whole panels only). From a first_block past 0 the sums go on from those in out (whole
// panels, out not null): the float steps of every (row, token) stay in block order. One
// prefetch step per super-block and pass.
template <typename Format, int kTokens>
void dot_packed_panel(int64_t n_blocks, const uint8_t* panel, StagedTokens tokens, int64_t n_rows, float* out,
                      int64_t out_stride, PrefetchCursor& prefetch, RunningMax* row_max, int64_t first_column,
                      int64_t first_block = 0) {
  constexpr size_t kBlockBytes = kPanelRows * sizeof(typename Format::Block);
  constexpr int kPasses = kPanelRows / V::kLanes;
  const int64_t needed_passes = (n_rows + V::kLanes - 1) / V::kLanes;
  const int passes = static_cast<int>(needed_passes < kPasses ? needed_passes : kPasses);
  Accumulator acc[kPasses][kTokens];
  if (first_block > 0) {
    for (int half = 0; half < passes; ++half) {
      for (int t = 0; t < kTokens; ++t) acc[half][t].sum = V::load_ps(out + t * out_stride + half * V::kLanes);
    }
  }
  auto run = [&](int64_t b, int half) {
    prefetch.step();
    dot_packed_block<Format, kTokens>(panel + static_cast<size_t>(first_block + b) * kBlockBytes, half,
                                      tokens.block_quants(first_block + b), tokens.block_meta(first_block + b),
                                      acc[half]);
  };
  if constexpr (kPasses > 1 && kTokens <= kInterleavedPassTokens) {
    for (int64_t b = 0; b < n_blocks; ++b) {
#pragma GCC unroll 1
      for (int half = 0; half < kPasses; ++half) {
        if (half < passes) run(b, half);
      }
    }
  } else {
    for (int half = 0; half < passes; ++half) {
      for (int64_t b = 0; b < n_blocks; ++b) run(b, half);
    }
  }
  for (int half = 0; half < passes; ++half) {
    const int64_t rows = n_rows - half * V::kLanes;
    for (int t = 0; t < kTokens; ++t) {
      if (out != nullptr) V::store(out + t * out_stride + half * V::kLanes, acc[half][t].sum, rows < V::kLanes ? static_cast<int>(rows) : V::kLanes);
      if (row_max != nullptr) V::fold_max(acc[half][t].sum, first_column + half * V::kLanes, row_max[t]);
    }
  }
}

// Repacked matrices (n_w_rows a multiple of 16), every number of tokens: tokens staged
// kKQuantTokenBlock at a time, each panel run against tiles of up to V::kTokenTile of them (decode:
// the matrix is then one sequential stream, with no horizontal sums). kPrefetch: software
// prefetch of the next panel while this one is computed; whether that beats the hardware
// prefetcher alone depends on the CPU (the load-time tuner times both; the same bits).
template <typename Format, bool kPrefetch>
void dot_packed_panels(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride, int64_t n_a_rows,
                       float* out, int64_t out_stride, RunningMax* row_max) {
  constexpr int kTile = V::kTokenTile;
  // A chunk of a panel's super-blocks with a tile's quants: about 40 KiB, within L1.
  constexpr int64_t kChunkBytes = 40 * 1024;
  constexpr int64_t kChunkBlocks =
      kChunkBytes / (kPanelRows * static_cast<int64_t>(sizeof(typename Format::Block)) + kTile * kSuperBlockSize);
  const PanelMatrix panels(w, n / kSuperBlockSize, kPanelRows * sizeof(typename Format::Block));
  const auto* activations = static_cast<const uint8_t*>(a);
  const int64_t n_blocks = panels.n_blocks, panel_bytes = panels.panel_bytes;
  constexpr int kPasses = kPanelRows / V::kLanes;
  for (int64_t t0 = 0; t0 < n_a_rows; t0 += kKQuantTokenBlock) {
    const int64_t n_tokens = n_a_rows - t0 < kKQuantTokenBlock ? n_a_rows - t0 : kKQuantTokenBlock;
    const StagedTokens tokens = stage_tokens<Format>(n_blocks, activations + t0 * a_stride, a_stride, n_tokens);
    const int64_t n_tiles = (n_tokens + kTile - 1) / kTile;
    for (int64_t r0 = 0; r0 < n_w_rows; r0 += kPanelRows) {
      const uint8_t* panel = panels.panel(r0);
      PrefetchCursor prefetch(panel + panel_bytes, 0, kPrefetch && r0 + kPanelRows < n_w_rows ? panel_bytes : 0,
                              n_blocks * n_tiles * kPasses);
      // Several tiles take the super-blocks a chunk at a time (kChunkBlocks), each chunk's
      // weights and tiles' quants together in L1 (row_max needs the whole sums at once).
      const int64_t chunk = n_tiles > 1 && out != nullptr && row_max == nullptr ? kChunkBlocks : n_blocks;
      for (int64_t b0 = 0; b0 < n_blocks; b0 += chunk) {
        auto tile = [&](auto size, int64_t t) {
          dot_packed_panel<Format, decltype(size)::value>(
              n_blocks - b0 < chunk ? n_blocks - b0 : chunk, panel, tokens.from(t), kPanelRows,
              out != nullptr ? out + (t0 + t) * out_stride + r0 : nullptr, out_stride, prefetch,
              row_max != nullptr ? row_max + t0 + t : nullptr, r0, b0);
        };
        for_token_tiles<kTile>(n_tokens, tile);
      }
    }
  }
}

// The entry points of simd_kernels.h for one kernel file, outside its anonymous namespace.
#define TM_PACKED_KQUANT_ENTRY(name, Format, kPrefetch)                                                       \
  void name(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride, int64_t n_a_rows,     \
            float* out, int64_t out_stride, RunningMax* row_max) {                                            \
    dot_packed_panels<Format, kPrefetch>(n, w, n_w_rows, a, a_stride, n_a_rows, out, out_stride, row_max); \
  }
#define TM_PACKED_KQUANT_ENTRIES()                                                  \
  TM_PACKED_KQUANT_ENTRY(vec_dot_panels_q4_K_q8_K, PackedQ4K, true)                 \
  TM_PACKED_KQUANT_ENTRY(vec_dot_panels_q4_K_q8_K_unprefetched, PackedQ4K, false)   \
  TM_PACKED_KQUANT_ENTRY(vec_dot_panels_q5_K_q8_K, PackedQ5K, true)                 \
  TM_PACKED_KQUANT_ENTRY(vec_dot_panels_q5_K_q8_K_unprefetched, PackedQ5K, false)   \
  TM_PACKED_KQUANT_ENTRY(vec_dot_panels_q6_K_q8_K, PackedQ6K, true)                 \
  TM_PACKED_KQUANT_ENTRY(vec_dot_panels_q6_K_q8_K_unprefetched, PackedQ6K, false)   \
  TM_PACKED_KQUANT_ENTRY(vec_dot_panels_iq4_xs_q8_K, PackedIQ4XS, true)             \
  TM_PACKED_KQUANT_ENTRY(vec_dot_panels_iq4_xs_q8_K_unprefetched, PackedIQ4XS, false)
