// The lattice i-quants (blocks.h): IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M.
// Dequantization gives gguf-py's floats bit for bit; the dot products against Q8_K sum
// each super-block's integer products exactly, then fuse them into the running sum with
// one fused multiply-add (d_w * d_a, the sum, the total: the steps every kernel repeats,
// lattice_x86-inl.h; ggml rounds the product apart, a last-bit difference).
// The quantizers are in quants_iq_lattice_quantize.cc.
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"
#include "quant/kernels_ref.h"

namespace tokenmill::quant::ref {

namespace {

constexpr int kSubBlocks = kSuperBlockSize / 32;

uint32_t load_u32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

float sign_of(uint8_t signs, int j) { return (signs >> j) & 1 ? -1.0f : 1.0f; }

// y[0, width) = scale * grid * sign, in that order of rounding.
template <typename T>
void put_group(float* y, float scale, const T* grid, int width, uint8_t signs) {
  for (int j = 0; j < width; ++j) y[j] = scale * static_cast<float>(grid[j]) * sign_of(signs, j);
}

// Σ grid[j] * sign_j * q[j] over a group.
template <typename T>
int32_t dot_group(const T* grid, int width, uint8_t signs, const int8_t* q) {
  int32_t sum = 0;
  for (int j = 0; j < width; ++j) {
    const int32_t v = static_cast<int32_t>(grid[j]) * q[j];
    sum += (signs >> j) & 1 ? -v : v;
  }
  return sum;
}

// IQ2_XS and IQ2_S: the index and sign pattern of group g (0..31).
struct Group {
  uint32_t index;
  uint8_t signs;
};
Group iq2_xs_group(const BlockIQ2_XS& x, int g) { return {x.qs[g] & 511u, iq_sign_pattern(x.qs[g] >> 9)}; }
Group iq2_s_group(const BlockIQ2_S& x, int g) {
  return {x.qs[g] | ((static_cast<uint32_t>(x.qh[g / 4]) >> (2 * (g % 4)) & 3u) << 8), x.signs[g]};
}

// IQ3_S: the grid index of quant i (0..63).
uint32_t iq3_s_index(const BlockIQ3_S& x, int i) {
  return x.qs[i] | ((static_cast<uint32_t>(x.qh[i / 8]) >> (i % 8) & 1u) << 8);
}

// IQ1_M: the nibble of group g (0..31): 3 high index bits, the delta's sign in bit 3.
uint32_t iq1_m_nibble(const BlockIQ1_M& x, int g) { return (x.qh[g / 2] >> (4 * (g % 2))) & 0xfu; }
// IQ1_M's scale (0..7) of the 16 weights h (0..15).
int iq1_m_sub_scale(const BlockIQ1_M& x, int h) { return (x.scales[h / 4] >> (3 * (h % 4))) & 7; }

constexpr float kIq1Delta = 0.125f;

// An IQ1 super-block's total: the grid's sum plus the shifts' (exact: 1/8 is a power of two).
float shifted_total(int32_t grid_sum, int32_t shift_sum) {
  return static_cast<float>(grid_sum) + kIq1Delta * static_cast<float>(shift_sum);
}

}  // namespace

// ---------------------------------------------------------------------------- IQ2_XXS

void dequantize_row_iq2_xxs(const void* src, float* y, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ2_XXS*>(src);
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    const BlockIQ2_XXS& x = blocks[b];
    const float d = f16_to_f32(x.d);
    for (int ib = 0; ib < kSubBlocks; ++ib, y += 32) {
      const uint32_t a0 = load_u32(&x.qs[4 * ib]);
      const uint32_t a1 = load_u32(&x.qs[4 * ib + 2]);
      const float db = d * (0.5f + static_cast<float>(a1 >> 28)) * 0.25f;
      for (int l = 0; l < 4; ++l) {
        put_group(y + 8 * l, db, kIq2XxsGrid[(a0 >> (8 * l)) & 0xff], 8, iq_sign_pattern(a1 >> (7 * l)));
      }
    }
  }
}

float vec_dot_iq2_xxs_q8_K(int64_t n, const void* w, const void* a) {
  const auto* xs = static_cast<const BlockIQ2_XXS*>(w);
  const auto* ys = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    const BlockIQ2_XXS& x = xs[b];
    const int8_t* q = ys[b].qs;
    int32_t block_sum = 0;
    for (int ib = 0; ib < kSubBlocks; ++ib) {
      const uint32_t a0 = load_u32(&x.qs[4 * ib]);
      const uint32_t a1 = load_u32(&x.qs[4 * ib + 2]);
      int32_t sub = 0;
      for (int l = 0; l < 4; ++l, q += 8) {
        sub += dot_group(kIq2XxsGrid[(a0 >> (8 * l)) & 0xff], 8, iq_sign_pattern(a1 >> (7 * l)), q);
      }
      block_sum += sub * static_cast<int32_t>(2 * (a1 >> 28) + 1);
    }
    sum = std::fma(f16_to_f32(x.d) * ys[b].d, static_cast<float>(block_sum), sum);
  }
  return 0.125f * sum;
}

// ----------------------------------------------------------------------- IQ2_XS, IQ2_S

namespace {

template <typename Block, Group (*kGroup)(const Block&, int), const uint8_t (*kGrid)[8]>
void dequantize_iq2_scaled(const void* src, float* y, int64_t n) {
  const auto* blocks = static_cast<const Block*>(src);
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    const Block& x = blocks[b];
    const float d = f16_to_f32(x.d);
    for (int g = 0; g < 32; ++g, y += 8) {
      const int s = (x.scales[g / 4] >> (4 * (g / 2 % 2))) & 0xf;
      const float db = d * (0.5f + static_cast<float>(s)) * 0.25f;
      const Group group = kGroup(x, g);
      put_group(y, db, kGrid[group.index], 8, group.signs);
    }
  }
}

template <typename Block, Group (*kGroup)(const Block&, int), const uint8_t (*kGrid)[8]>
float vec_dot_iq2_scaled(int64_t n, const void* w, const void* a) {
  const auto* xs = static_cast<const Block*>(w);
  const auto* ys = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    const Block& x = xs[b];
    const int8_t* q = ys[b].qs;
    int32_t block_sum = 0;
    for (int h = 0; h < 16; ++h) {  // 16 weights per scale: two groups
      int32_t sub = 0;
      for (int g = 2 * h; g < 2 * h + 2; ++g, q += 8) {
        const Group group = kGroup(x, g);
        sub += dot_group(kGrid[group.index], 8, group.signs, q);
      }
      block_sum += sub * (2 * ((x.scales[h / 2] >> (4 * (h % 2))) & 0xf) + 1);
    }
    sum = std::fma(f16_to_f32(x.d) * ys[b].d, static_cast<float>(block_sum), sum);
  }
  return 0.125f * sum;
}

}  // namespace

void dequantize_row_iq2_xs(const void* src, float* y, int64_t n) {
  dequantize_iq2_scaled<BlockIQ2_XS, iq2_xs_group, kIq2XsGrid>(src, y, n);
}
float vec_dot_iq2_xs_q8_K(int64_t n, const void* w, const void* a) {
  return vec_dot_iq2_scaled<BlockIQ2_XS, iq2_xs_group, kIq2XsGrid>(n, w, a);
}
void dequantize_row_iq2_s(const void* src, float* y, int64_t n) {
  dequantize_iq2_scaled<BlockIQ2_S, iq2_s_group, kIq2SGrid>(src, y, n);
}
float vec_dot_iq2_s_q8_K(int64_t n, const void* w, const void* a) {
  return vec_dot_iq2_scaled<BlockIQ2_S, iq2_s_group, kIq2SGrid>(n, w, a);
}

// ---------------------------------------------------------------------------- IQ3_XXS

void dequantize_row_iq3_xxs(const void* src, float* y, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ3_XXS*>(src);
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    const BlockIQ3_XXS& x = blocks[b];
    const float d = f16_to_f32(x.d);
    for (int ib = 0; ib < kSubBlocks; ++ib, y += 32) {
      const uint32_t a1 = load_u32(&x.scales_and_signs[4 * ib]);
      const float db = d * (0.5f + static_cast<float>(a1 >> 28)) * 0.5f;
      for (int l = 0; l < 4; ++l) {
        const uint8_t signs = iq_sign_pattern(a1 >> (7 * l));
        put_group(y + 8 * l, db, kIq3XxsGrid[x.qs[8 * ib + 2 * l]], 4, signs);
        put_group(y + 8 * l + 4, db, kIq3XxsGrid[x.qs[8 * ib + 2 * l + 1]], 4, static_cast<uint8_t>(signs >> 4));
      }
    }
  }
}

float vec_dot_iq3_xxs_q8_K(int64_t n, const void* w, const void* a) {
  const auto* xs = static_cast<const BlockIQ3_XXS*>(w);
  const auto* ys = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    const BlockIQ3_XXS& x = xs[b];
    const int8_t* q = ys[b].qs;
    int32_t block_sum = 0;
    for (int ib = 0; ib < kSubBlocks; ++ib) {
      const uint32_t a1 = load_u32(&x.scales_and_signs[4 * ib]);
      int32_t sub = 0;
      for (int l = 0; l < 4; ++l, q += 8) {
        const uint8_t signs = iq_sign_pattern(a1 >> (7 * l));
        sub += dot_group(kIq3XxsGrid[x.qs[8 * ib + 2 * l]], 4, signs, q);
        sub += dot_group(kIq3XxsGrid[x.qs[8 * ib + 2 * l + 1]], 4, static_cast<uint8_t>(signs >> 4), q + 4);
      }
      block_sum += sub * static_cast<int32_t>(2 * (a1 >> 28) + 1);
    }
    sum = std::fma(f16_to_f32(x.d) * ys[b].d, static_cast<float>(block_sum), sum);
  }
  return 0.25f * sum;
}

// ------------------------------------------------------------------------------ IQ3_S

void dequantize_row_iq3_s(const void* src, float* y, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ3_S*>(src);
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    const BlockIQ3_S& x = blocks[b];
    const float d = f16_to_f32(x.d);
    for (int ib = 0; ib < kSubBlocks; ++ib, y += 32) {
      const float db = d * static_cast<float>(1 + 2 * ((x.scales[ib / 2] >> (4 * (ib % 2))) & 0xf));
      for (int l = 0; l < 4; ++l) {
        const uint8_t signs = x.signs[4 * ib + l];
        put_group(y + 8 * l, db, kIq3SGrid[iq3_s_index(x, 8 * ib + 2 * l)], 4, signs);
        put_group(y + 8 * l + 4, db, kIq3SGrid[iq3_s_index(x, 8 * ib + 2 * l + 1)], 4,
                  static_cast<uint8_t>(signs >> 4));
      }
    }
  }
}

float vec_dot_iq3_s_q8_K(int64_t n, const void* w, const void* a) {
  const auto* xs = static_cast<const BlockIQ3_S*>(w);
  const auto* ys = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    const BlockIQ3_S& x = xs[b];
    const int8_t* q = ys[b].qs;
    int32_t block_sum = 0;
    for (int ib = 0; ib < kSubBlocks; ++ib) {
      int32_t sub = 0;
      for (int l = 0; l < 4; ++l, q += 8) {
        const uint8_t signs = x.signs[4 * ib + l];
        sub += dot_group(kIq3SGrid[iq3_s_index(x, 8 * ib + 2 * l)], 4, signs, q);
        sub += dot_group(kIq3SGrid[iq3_s_index(x, 8 * ib + 2 * l + 1)], 4, static_cast<uint8_t>(signs >> 4), q + 4);
      }
      block_sum += sub * (1 + 2 * ((x.scales[ib / 2] >> (4 * (ib % 2))) & 0xf));
    }
    sum = std::fma(f16_to_f32(x.d) * ys[b].d, static_cast<float>(block_sum), sum);
  }
  return sum;
}

// ------------------------------------------------------------------------------ IQ1_S

void dequantize_row_iq1_s(const void* src, float* y, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ1_S*>(src);
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    const BlockIQ1_S& x = blocks[b];
    const float d = f16_to_f32(x.d);
    for (int ib = 0; ib < kSubBlocks; ++ib) {
      const uint32_t qh = x.qh[ib];
      const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
      const float delta = qh & 0x8000 ? -kIq1Delta : kIq1Delta;
      for (int l = 0; l < 4; ++l, y += 8) {
        const int8_t* grid = kIq1SGrid[x.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
        for (int j = 0; j < 8; ++j) y[j] = dl * (static_cast<float>(grid[j]) + delta);
      }
    }
  }
}

float vec_dot_iq1_s_q8_K(int64_t n, const void* w, const void* a) {
  const auto* xs = static_cast<const BlockIQ1_S*>(w);
  const auto* ys = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    const BlockIQ1_S& x = xs[b];
    const BlockQ8_K& y = ys[b];
    int32_t grid_sum = 0, delta_sum = 0;
    for (int ib = 0; ib < kSubBlocks; ++ib) {
      const uint32_t qh = x.qh[ib];
      const int32_t ls = static_cast<int32_t>(2 * ((qh >> 12) & 7) + 1);
      int32_t sub = 0;
      for (int l = 0; l < 4; ++l) {
        const int8_t* grid = kIq1SGrid[x.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
        for (int j = 0; j < 8; ++j) sub += grid[j] * y.qs[32 * ib + 8 * l + j];
      }
      grid_sum += ls * sub;
      delta_sum += ls * (qh & 0x8000 ? -1 : 1) * (y.bsums[2 * ib] + y.bsums[2 * ib + 1]);
    }
    sum = std::fma(f16_to_f32(x.d) * y.d, shifted_total(grid_sum, delta_sum), sum);
  }
  return sum;
}

// ------------------------------------------------------------------------------ IQ1_M

void dequantize_row_iq1_m(const void* src, float* y, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ1_M*>(src);
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    const BlockIQ1_M& x = blocks[b];
    const float d = f16_to_f32(iq1_m_scale_bits(x));
    for (int g = 0; g < 32; ++g, y += 8) {
      const float dl = d * static_cast<float>(2 * iq1_m_sub_scale(x, g / 2) + 1);
      const uint32_t nibble = iq1_m_nibble(x, g);
      const float delta = nibble & 8 ? -kIq1Delta : kIq1Delta;
      const int8_t* grid = kIq1SGrid[x.qs[g] | ((nibble & 7) << 8)];
      for (int j = 0; j < 8; ++j) y[j] = dl * (static_cast<float>(grid[j]) + delta);
    }
  }
}

float vec_dot_iq1_m_q8_K(int64_t n, const void* w, const void* a) {
  const auto* xs = static_cast<const BlockIQ1_M*>(w);
  const auto* ys = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    const BlockIQ1_M& x = xs[b];
    const int8_t* q = ys[b].qs;
    int32_t grid_sum = 0, delta_sum = 0;
    for (int g = 0; g < 32; ++g, q += 8) {
      const uint32_t nibble = iq1_m_nibble(x, g);
      const int8_t* grid = kIq1SGrid[x.qs[g] | ((nibble & 7) << 8)];
      int32_t grid_dot = 0, q_total = 0;
      for (int j = 0; j < 8; ++j) {
        grid_dot += grid[j] * q[j];
        q_total += q[j];
      }
      const int32_t ls = 2 * iq1_m_sub_scale(x, g / 2) + 1;
      grid_sum += ls * grid_dot;
      delta_sum += ls * (nibble & 8 ? -q_total : q_total);
    }
    sum = std::fma(f16_to_f32(iq1_m_scale_bits(x)) * ys[b].d, shifted_total(grid_sum, delta_sum), sum);
  }
  return sum;
}

}  // namespace tokenmill::quant::ref
