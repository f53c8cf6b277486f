// NEON attention for one query token and one group of query heads (attention_kernels.h):
// attention_simd-inl.h's body on vectors of 4 floats. A 16-lane q·k accumulator is four
// vectors, filled in four passes over a tile's rows; eight (head, key) chains are in
// flight, and a value pass covers 16 dims. Each primitive computes what its AVX2 and
// AVX-512 counterparts compute, rounding for rounding (fused multiply-adds where they
// fuse, the same reduction trees, x86's max for NaN-free input), so the bits are theirs.
//
// Only intrinsics and C library calls here, as in the x86 bodies.
#include <arm_neon.h>
#include <math.h>

#include <cstdint>
#include <cstring>

#include "ops/cpu/attention_kernels.h"

namespace tokenmill::ops::cpu {

namespace {

struct Simd {
  using F = float32x4_t;
  static constexpr int kLanes = 4;
  static constexpr int kScoreChains = 8;
  static constexpr int kValueVectors = 4;

  static F zero() { return vdupq_n_f32(0.0f); }
  static F set1(float x) { return vdupq_n_f32(x); }
  static F load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, F v) { vst1q_f32(p, v); }
  static F add(F a, F b) { return vaddq_f32(a, b); }
  static F sub(F a, F b) { return vsubq_f32(a, b); }
  static F mul(F a, F b) { return vmulq_f32(a, b); }
  static F fma(F a, F b, F c) { return vfmaq_f32(c, a, b); }  // a * b + c, one rounding

  static F load_f16(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
  static F round_f16(F v) { return vcvt_f32_f16(vcvt_f16_f32(v)); }  // to nearest, ties to even
  static F scale_of(uint16_t bits) {
    return vdupq_n_f32(vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(bits))), 0));
  }
  static F from_codes(const uint8_t* codes, F scale) {
    int32_t four;
    std::memcpy(&four, codes, sizeof four);
    const int16x4_t wide = vget_low_s16(vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(four))));
    return vmulq_f32(vcvtq_f32_s32(vmovl_s16(wide)), scale);
  }

  static uint32x4_t first(int32_t n) {
    const uint32_t lanes[4] = {0, 1, 2, 3};
    return vcltq_u32(vld1q_u32(lanes), vdupq_n_u32(static_cast<uint32_t>(n < 4 ? n : 4)));
  }
  static F load_first(const float* p, int32_t n) {
    if (n >= kLanes) return vld1q_f32(p);
    float lanes[kLanes] = {};
    for (int32_t i = 0; i < n; ++i) lanes[i] = p[i];
    return vld1q_f32(lanes);
  }
  static void store_first(float* p, int32_t n, F v) {
    if (n >= kLanes) {
      vst1q_f32(p, v);
      return;
    }
    float lanes[kLanes];
    vst1q_f32(lanes, v);
    for (int32_t i = 0; i < n; ++i) p[i] = lanes[i];
  }
  static F keep_first(F v, int32_t n) { return vreinterpretq_f32_u32(vandq_u32(first(n), vreinterpretq_u32_f32(v))); }
  // x86's max: a > b ? a : b.
  static F max_x86(F a, F b) { return vbslq_f32(vcgtq_f32(a, b), a, b); }
  static F max_first(F m, F v, int32_t n) { return vbslq_f32(first(n), max_x86(m, v), m); }
  static float reduce_max(F v) { return vmaxvq_f32(v); }

  // dots[c] = the 16 lanes of acc[0..3][c] (lanes 0-3, 4-7, 8-11, 12-15) summed as the
  // AVX-512 kernel sums one vector: lane i + lane i + 8, then i + 4, then i + 2, then 1.
  template <int kChains>
  static void reduce_16(const F (&acc)[4][kChains], float* dots) {
    for (int c = 0; c < kChains; ++c) {
      const F s4 = vaddq_f32(vaddq_f32(acc[0][c], acc[2][c]), vaddq_f32(acc[1][c], acc[3][c]));
      const float32x2_t s2 = vadd_f32(vget_low_f32(s4), vget_high_f32(s4));
      dots[c] = vget_lane_f32(s2, 0) + vget_lane_f32(s2, 1);
    }
  }

  // e^x for x <= 0, as the AVX2 body computes it (the same constants, fused steps and
  // scaling by 2^(n + 64) then 2^-64); lanes below -88 give 0.
  static F exp_nonpositive(F x) {
    const F n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
    F r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    F p = vdupq_n_f32(1.0f / 5040.0f);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 720.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 120.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 24.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 6.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    const int32x4_t exponent = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127 + 64)), 23);
    const F scaled = vmulq_f32(vmulq_f32(p, vreinterpretq_f32_s32(exponent)), vdupq_n_f32(0x1p-64f));
    return vreinterpretq_f32_u32(vandq_u32(vcgeq_f32(x, vdupq_n_f32(-88.0f)), vreinterpretq_u32_f32(scaled)));
  }

  // Lane l sums the values of keys l (mod 16): keys j .. j + 3 go to lanes 4 (j / 4 % 4) ...
  struct DoubleSums16 {
    float64x2_t lanes[8] = {vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0),
                            vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0)};
    void add(F e, int32_t j) {
      float64x2_t* pair = lanes + 2 * ((j / 4) % 4);
      pair[0] = vaddq_f64(pair[0], vcvt_f64_f32(vget_low_f32(e)));
      pair[1] = vaddq_f64(pair[1], vcvt_high_f64_f32(e));
    }
    double total() const {
      double values[16];
      for (int i = 0; i < 8; ++i) vst1q_f64(values + 2 * i, lanes[i]);
      double sum = 0.0;
      for (double value : values) sum += value;
      return sum;
    }
  };
};

#include "ops/cpu/attention_simd-inl.h"

}  // namespace

void attend_head_group_neon(const HeadGroupAttention& a) { attend_any_rows(a); }

}  // namespace tokenmill::ops::cpu
