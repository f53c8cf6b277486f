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
// quant/iq_grids.h, quant/kernels_ref.h, quant/kernels/lattice_facts.h and
// quant/kernels/scratch.h), so each copy has internal linkage.
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
// signs are gathered once for them all, and for many rows once for the whole call.

constexpr int kLatticeRowTile = 4;

// The ±1 bytes of each sign byte: byte j of kSignBytes.v[b] is -1 where bit j of b is set,
// else 1 (the operand vpsignb applies to eight activations).
constexpr struct SignBytes {
  uint64_t v[256];
  constexpr SignBytes() : v() {
    for (uint32_t b = 0; b < 256; ++b) {
      for (int j = 0; j < 8; ++j) v[b] |= static_cast<uint64_t>((b >> j) & 1 ? 0xff : 0x01) << (8 * j);
    }
  }
} kSignBytes;

// The same for the 7 stored bits of a sign pattern (iq_sign_pattern gives the 8th).
constexpr struct StoredSignBytes {
  uint64_t v[128];
  constexpr StoredSignBytes() : v() {
    for (uint32_t i = 0; i < 128; ++i) v[i] = kSignBytes.v[iq_sign_pattern(i)];
  }
} kStoredSignBytes;

inline __m256i u64x4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  return _mm256_setr_epi64x(static_cast<long long>(a), static_cast<long long>(b), static_cast<long long>(c),
                            static_cast<long long>(d));
}

// Four stored sign patterns at bits 0, 7, 14, 21 of `bits` as ±1 bytes.
inline __m256i stored_signs(uint32_t bits) {
  return u64x4(kStoredSignBytes.v[bits & 127], kStoredSignBytes.v[(bits >> 7) & 127],
               kStoredSignBytes.v[(bits >> 14) & 127], kStoredSignBytes.v[(bits >> 21) & 127]);
}

// Four sign bytes, one bit per weight, as ±1 bytes.
inline __m256i bit_signs(const uint8_t* b) {
  return u64x4(kSignBytes.v[b[0]], kSignBytes.v[b[1]], kSignBytes.v[b[2]], kSignBytes.v[b[3]]);
}

inline uint64_t row8(const void* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline int32_t row4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline uint32_t word(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline __m256i grid8x4(const void* g0, const void* g1, const void* g2, const void* g3) {
  return u64x4(row8(g0), row8(g1), row8(g2), row8(g3));
}

// Lane r = the total of acc[r]'s eight lanes (exact integer adds), for r < R; 0 beyond.
template <int R>
inline __m128i totals4(const __m256i* acc) {
  static_assert(R >= 1 && R <= 4);
  const __m256i zero = _mm256_setzero_si256();
  const __m256i h01 = _mm256_hadd_epi32(acc[0], R > 1 ? acc[1 % R] : zero);
  const __m256i h23 = _mm256_hadd_epi32(R > 2 ? acc[2 % R] : zero, R > 3 ? acc[3 % R] : zero);
  const __m256i h = _mm256_hadd_epi32(h01, h23);
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// One sub-block (32 weights) of a format: u (unsigned bytes) and s (signs, or IQ1's grid)
// such that weight_i * a_i = u_i * sign(a_i, s_i); the scale of each 16-bit pair sum; for
// the IQ1 formats also the shift's signs (±1 bytes).
struct SubBlock {
  __m256i u, s, scales, shift_signs;
};

struct Iq2XxsFormat : Iq2XxsFacts {
  static SubBlock sub_block(const Block& x, int ib) {
    const uint32_t a0 = word(&x.qs[4 * ib]), a1 = word(&x.qs[4 * ib + 2]);
    return {grid8x4(kIq2XxsGrid[a0 & 0xff], kIq2XxsGrid[(a0 >> 8) & 0xff], kIq2XxsGrid[(a0 >> 16) & 0xff],
                    kIq2XxsGrid[a0 >> 24]),
            stored_signs(a1), _mm256_set1_epi16(static_cast<int16_t>(2 * (a1 >> 28) + 1)), _mm256_setzero_si256()};
  }
};

inline __m256i scales_by_half(int low, int high) {
  return _mm256_setr_m128i(_mm_set1_epi16(static_cast<int16_t>(low)), _mm_set1_epi16(static_cast<int16_t>(high)));
}

struct Iq2XsFormat : Iq2XsFacts {
  static SubBlock sub_block(const Block& x, int ib) {
    const uint16_t* q = x.qs + 4 * ib;
    return {grid8x4(kIq2XsGrid[q[0] & 511], kIq2XsGrid[q[1] & 511], kIq2XsGrid[q[2] & 511], kIq2XsGrid[q[3] & 511]),
            u64x4(kStoredSignBytes.v[q[0] >> 9], kStoredSignBytes.v[q[1] >> 9], kStoredSignBytes.v[q[2] >> 9],
                  kStoredSignBytes.v[q[3] >> 9]),
            scales_by_half(2 * (x.scales[ib] & 0xf) + 1, 2 * (x.scales[ib] >> 4) + 1), _mm256_setzero_si256()};
  }
};

struct Iq2SFormat : Iq2SFacts {
  static SubBlock sub_block(const Block& x, int ib) {
    const uint8_t* q = x.qs + 4 * ib;
    const uint32_t h = x.qh[ib];
    return {grid8x4(kIq2SGrid[q[0] | (h & 3) << 8], kIq2SGrid[q[1] | (h >> 2 & 3) << 8],
                    kIq2SGrid[q[2] | (h >> 4 & 3) << 8], kIq2SGrid[q[3] | (h >> 6 & 3) << 8]),
            bit_signs(x.signs + 4 * ib),
            scales_by_half(2 * (x.scales[ib] & 0xf) + 1, 2 * (x.scales[ib] >> 4) + 1), _mm256_setzero_si256()};
  }
};

struct Iq3XxsFormat : Iq3XxsFacts {
  static SubBlock sub_block(const Block& x, int ib) {
    const uint8_t* q = x.qs + 8 * ib;
    const uint32_t a1 = word(x.scales_and_signs + 4 * ib);
    return {_mm256_setr_epi32(row4(kIq3XxsGrid[q[0]]), row4(kIq3XxsGrid[q[1]]), row4(kIq3XxsGrid[q[2]]),
                              row4(kIq3XxsGrid[q[3]]), row4(kIq3XxsGrid[q[4]]), row4(kIq3XxsGrid[q[5]]),
                              row4(kIq3XxsGrid[q[6]]), row4(kIq3XxsGrid[q[7]])),
            stored_signs(a1), _mm256_set1_epi16(static_cast<int16_t>(2 * (a1 >> 28) + 1)), _mm256_setzero_si256()};
  }
};

struct Iq3SFormat : Iq3SFacts {
  static SubBlock sub_block(const Block& x, int ib) {
    const uint8_t* q = x.qs + 8 * ib;
    const uint32_t h = x.qh[ib];
    auto g = [&](int k) { return row4(kIq3SGrid[q[k] | (h >> k & 1) << 8]); };
    return {_mm256_setr_epi32(g(0), g(1), g(2), g(3), g(4), g(5), g(6), g(7)), bit_signs(x.signs + 4 * ib),
            _mm256_set1_epi16(static_cast<int16_t>(1 + 2 * ((x.scales[ib / 2] >> (4 * (ib % 2))) & 0xf))),
            _mm256_setzero_si256()};
  }
};

struct Iq1SFormat : Iq1SFacts {
  static SubBlock sub_block(const Block& x, int ib) {
    const uint8_t* q = x.qs + 4 * ib;
    const uint32_t h = x.qh[ib];
    return {_mm256_set1_epi8(1),
            grid8x4(kIq1SGrid[q[0] | (h & 7) << 8], kIq1SGrid[q[1] | (h >> 3 & 7) << 8],
                    kIq1SGrid[q[2] | (h >> 6 & 7) << 8], kIq1SGrid[q[3] | (h >> 9 & 7) << 8]),
            _mm256_set1_epi16(static_cast<int16_t>(2 * ((h >> 12) & 7) + 1)),
            _mm256_set1_epi8(h & 0x8000 ? -1 : 1)};
  }
};

struct Iq1MFormat : Iq1MFacts {
  static SubBlock sub_block(const Block& x, int ib) {
    const uint8_t* q = x.qs + 4 * ib;
    const uint32_t h = x.qh[2 * ib] | static_cast<uint32_t>(x.qh[2 * ib + 1]) << 8;  // a nibble per group
    const uint32_t sc = x.scales[ib / 2] >> (6 * (ib % 2));
    // The shift's sign per group (bit 3 of its nibble) on all 8 of its bytes.
    auto shift = [&](int g) { return h >> (4 * g + 3) & 1 ? ~uint64_t{0} : uint64_t{0x0101010101010101}; };
    return {_mm256_set1_epi8(1),
            grid8x4(kIq1SGrid[q[0] | (h & 7) << 8], kIq1SGrid[q[1] | (h >> 4 & 7) << 8],
                    kIq1SGrid[q[2] | (h >> 8 & 7) << 8], kIq1SGrid[q[3] | (h >> 12 & 7) << 8]),
            scales_by_half(static_cast<int>(2 * (sc & 7) + 1), static_cast<int>(2 * (sc >> 3 & 7) + 1)),
            u64x4(shift(0), shift(1), shift(2), shift(3))};
  }
};

// Where a tile's sub-blocks come from: unpacked from the row's blocks as they are needed,
// or read back from a row unpacked once beforehand (unpack_row).
template <typename Format>
struct FromBlocks {
  const typename Format::Block* x;
  SubBlock get(int64_t b, int ib) const { return Format::sub_block(x[b], ib); }
};
struct FromUnpacked {
  const SubBlock* sub_blocks;
  const SubBlock& get(int64_t b, int ib) const { return sub_blocks[b * (kSuperBlockSize / 32) + ib]; }
};

template <typename Format, int R, typename Source>
void lattice_tile(int64_t nb, const typename Format::Block* x, const Source& source, const uint8_t* a,
                  size_t a_stride, float* out, int64_t out_stride) {
  const BlockQ8_K* y[R];
  for (int r = 0; r < R; ++r) y[r] = reinterpret_cast<const BlockQ8_K*>(a + static_cast<size_t>(r) * a_stride);
  const __m256i ones = _mm256_set1_epi8(1);
  // Few rows leave the accumulators' latency exposed: then even and odd sub-blocks add
  // into two chains (exact integer sums, so any split gives the same totals).
  constexpr int kChains = R <= 2 ? 2 : 1;
  __m128 sums = _mm_setzero_ps();  // lane r: row r's running sum
  for (int64_t b = 0; b < nb; ++b) {
    __m256i grid_acc[kChains][R], shift_acc[kChains][R];
    for (int c = 0; c < kChains; ++c) {
      for (int r = 0; r < R; ++r) grid_acc[c][r] = shift_acc[c][r] = _mm256_setzero_si256();
    }
#pragma GCC unroll 8
    for (int ib = 0; ib < kSuperBlockSize / 32; ++ib) {
      const int c = ib % kChains;  // a constant once unrolled: the accumulators stay in registers
      const SubBlock& sb = source.get(b, ib);
      for (int r = 0; r < R; ++r) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[r][b].qs + 32 * ib));
        grid_acc[c][r] = LatticeDot::dot(grid_acc[c][r], sb.u, _mm256_sign_epi8(q, sb.s), sb.scales);
        if constexpr (Format::kShifted) {
          shift_acc[c][r] = LatticeDot::dot(shift_acc[c][r], ones, _mm256_sign_epi8(q, sb.shift_signs), sb.scales);
        }
      }
    }
    for (int c = 1; c < kChains; ++c) {
      for (int r = 0; r < R; ++r) {
        grid_acc[0][r] = _mm256_add_epi32(grid_acc[0][r], grid_acc[c][r]);
        shift_acc[0][r] = _mm256_add_epi32(shift_acc[0][r], shift_acc[c][r]);
      }
    }
    // The rows' super-block totals side by side, then the reference's fused step for all
    // of them at once (lane r: the same operations on the same values as its scalar form).
    __m128 total = _mm_cvtepi32_ps(totals4<R>(grid_acc[0]));
    if constexpr (Format::kShifted) {
      total = _mm_add_ps(total, _mm_mul_ps(_mm_set1_ps(0.125f), _mm_cvtepi32_ps(totals4<R>(shift_acc[0]))));
    }
    alignas(16) float a_d[4] = {};
    for (int r = 0; r < R; ++r) a_d[r] = y[r][b].d;
    const __m128 scale = _mm_mul_ps(_mm_set1_ps(_cvtsh_ss(Format::scale_bits(x[b]))), _mm_load_ps(a_d));
    sums = _mm_fmadd_ps(scale, total, sums);
  }
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, sums);
  for (int r = 0; r < R; ++r) out[r * out_stride] = Format::kFinal * lanes[r];
}

// Rows of activations from which on a weight row is unpacked once into scratch memory
// (128 bytes per 32 weights) and its tiles read it back, in place of unpacking it again
// for every tile of kLatticeRowTile rows: prefill.
constexpr int64_t kUnpackFromRows = 2 * kLatticeRowTile;

template <typename Format, typename Source>
void lattice_tiles(int64_t nb, const typename Format::Block* x, const Source& source, const uint8_t* rows,
                   size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride) {
  int64_t t = 0;
  for (; t + kLatticeRowTile <= n_a_rows; t += kLatticeRowTile) {
    lattice_tile<Format, kLatticeRowTile>(nb, x, source, rows + static_cast<size_t>(t) * a_stride, a_stride,
                                          out + t * out_stride, out_stride);
  }
  const uint8_t* rest = rows + static_cast<size_t>(t) * a_stride;
  switch (n_a_rows - t) {
    case 3: lattice_tile<Format, 3>(nb, x, source, rest, a_stride, out + t * out_stride, out_stride); break;
    case 2: lattice_tile<Format, 2>(nb, x, source, rest, a_stride, out + t * out_stride, out_stride); break;
    case 1: lattice_tile<Format, 1>(nb, x, source, rest, a_stride, out + t * out_stride, out_stride); break;
    default: break;
  }
}

// One weight row against n_a_rows activation rows, kLatticeRowTile at a time.
template <typename Format>
void lattice_rows(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows, float* out,
                  int64_t out_stride) {
  const int64_t nb = n / kSuperBlockSize;
  const auto* x = static_cast<const typename Format::Block*>(w);
  const auto* rows = static_cast<const uint8_t*>(a);
  if (n_a_rows < kUnpackFromRows) {
    lattice_tiles<Format>(nb, x, FromBlocks<Format>{x}, rows, a_stride, n_a_rows, out, out_stride);
    return;
  }
  constexpr int kPerBlock = kSuperBlockSize / 32;
  auto* unpacked = static_cast<SubBlock*>(
      thread_scratch(ScratchSlot::kPanel, static_cast<size_t>(nb) * kPerBlock * sizeof(SubBlock)));
  for (int64_t b = 0; b < nb; ++b) {
    for (int ib = 0; ib < kPerBlock; ++ib) unpacked[b * kPerBlock + ib] = Format::sub_block(x[b], ib);
  }
  lattice_tiles<Format>(nb, x, FromUnpacked{unpacked}, rows, a_stride, n_a_rows, out, out_stride);
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
  TM_DOT_ROWS_ENTRY(vec_dot_rows_iq1_m_q8_K, lattice_rows<Iq1MFormat>)
