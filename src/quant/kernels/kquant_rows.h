// Internal to quant/kernels: the K-quant row dot products (Q4_K, Q5_K, Q6_K against Q8_K,
// one weight row at a time), the loop every target shares. A target gives its integer
// step as a struct Sums with
//   static SuperBlockSums of(const Block& x, const BlockQ8_K& y);  // each block type
//   static float half(uint16_t h);                                 // f16 -> f32, exact
// and the float steps after each super-block are the reference's, in this order:
//   acc = fma(-float(M), dmin * y.d, acc)     (Q4_K, Q5_K)
//   acc = fma(float(T_lo), d * y.d, acc)
//   acc = fma(float(T_hi), d * y.d, acc)
// so every target gives each (row, token) the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "quant/blocks.h"

namespace tokenmill::quant {

// One super-block's integers for one row and one token: T = sum_j sc_j * isum_j split in
// two halves by sub-block (each format's order), and for Q4_K / Q5_K M = sum_j mn_j * (the
// activations' sum over sub-block j).
struct SuperBlockSums {
  int32_t t_lo = 0, t_hi = 0, m = 0;
};

// out[t * out_stride] = dot(w, activation row t). Decode reads each weight once: the
// super-blocks kPrefetchBytes ahead are requested (past a row's end that is the next row;
// past the matrix a prefetch is harmless).
template <typename Sums, typename Block, int kPrefetchBytes>
void kquant_rows(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows, float* out,
                 int64_t out_stride) {
  constexpr bool kHasMin = !std::is_same_v<Block, BlockQ6_K>;
  const auto* x = static_cast<const Block*>(w);
  const int64_t n_blocks = n / kSuperBlockSize;
  for (int64_t t = 0; t < n_a_rows; ++t) {
    const auto* y = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(a) + t * a_stride);
    float acc = 0.0f;
    for (int64_t b = 0; b < n_blocks; ++b) {
      const char* ahead = reinterpret_cast<const char*>(x + b) + kPrefetchBytes;
      for (size_t line = 0; line < sizeof(Block); line += 64) __builtin_prefetch(ahead + line, 0, 3);
      const SuperBlockSums s = Sums::of(x[b], y[b]);
      const float d = Sums::half(x[b].d) * y[b].d;
      if constexpr (kHasMin) acc = __builtin_fmaf(-static_cast<float>(s.m), Sums::half(x[b].dmin) * y[b].d, acc);
      acc = __builtin_fmaf(static_cast<float>(s.t_lo), d, acc);
      acc = __builtin_fmaf(static_cast<float>(s.t_hi), d, acc);
    }
    out[t * out_stride] = acc;
  }
}

}  // namespace tokenmill::quant
