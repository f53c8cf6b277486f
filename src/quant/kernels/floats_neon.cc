// NEON dot products of F32, F16 and BF16 rows: floats_simd-inl.h on 8 floats at a time
// (two vectors), summed in the AVX2 body's order, so results carry its bits.

#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "quant/kernels/simd_kernels.h"

namespace tokenmill::quant::neon {

namespace {

float half_to_float(uint16_t h) { return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0); }

struct Simd {
  static constexpr int kLanes = 8;
  static float32x4x2_t load_f32(const float* p) { return {vld1q_f32(p), vld1q_f32(p + 4)}; }
  static float32x4x2_t load_f16(const uint16_t* p) {
    return {vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))), vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p + 4)))};
  }
  static float32x4x2_t load_bf16(const uint16_t* p) {
    return {vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16)), vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p + 4), 16))};
  }
  static float32x4x2_t mul(float32x4x2_t a, float32x4x2_t b) {
    return {vmulq_f32(a.val[0], b.val[0]), vmulq_f32(a.val[1], b.val[1])};
  }

  // Lane l sums the products of values l (mod 8); total() adds lanes l and l + 4, then
  // those pairs, as the AVX2 body does.
  struct DoubleSums {
    float64x2_t lanes[4] = {vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0)};
    void add(float32x4x2_t products) {
      lanes[0] = vaddq_f64(lanes[0], vcvt_f64_f32(vget_low_f32(products.val[0])));
      lanes[1] = vaddq_f64(lanes[1], vcvt_high_f64_f32(products.val[0]));
      lanes[2] = vaddq_f64(lanes[2], vcvt_f64_f32(vget_low_f32(products.val[1])));
      lanes[3] = vaddq_f64(lanes[3], vcvt_high_f64_f32(products.val[1]));
    }
    double total() const {
      const float64x2_t s = vaddq_f64(vaddq_f64(lanes[0], lanes[2]), vaddq_f64(lanes[1], lanes[3]));
      return vgetq_lane_f64(s, 0) + vgetq_lane_f64(s, 1);
    }
  };
};

}  // namespace

#include "quant/kernels/floats_simd-inl.h"

}  // namespace tokenmill::quant::neon
