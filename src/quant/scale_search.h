// Scale searches shared by the K-quant reference quantizers: given a group of values,
// choose integer levels L[i] and a float scale (and for asymmetric formats a minimum)
// that minimise a weighted squared or absolute error.
//
// These reproduce, operation for operation, the searches of ggml's ggml-quants.c, so
// that our Q2_K … Q6_K files are byte-identical to llama.cpp's. Change the order of any
// float expression here and that stops being true.
#pragma once

#include <cmath>
#include <cstdint>

namespace tokenmill::quant {

// Groups whose largest magnitude is below this are stored as all zeros.
inline constexpr float kGroupMaxEpsilon = 1e-15f;

// Round to nearest, ties to even (the rounding of ggml's nearest_int).
// REQUIRES: |value| < 2^22, default floating-point rounding mode.
inline int round_to_int(float value) { return static_cast<int>(std::lrintf(value)); }

inline int clamp_int(int value, int lo, int hi) { return value < lo ? lo : (value > hi ? hi : value); }

// Symmetric levels in [-n_max, n_max - 1]: tries 19 scales around -n_max / (signed
// absmax) and keeps the one with the best weighted least-squares fit. Error weights are
// weights[i] if given, else x[i]^2. Writes L[i] = level + n_max and returns the scale
// (0 for an all-zero group, with L all zero).
// The mean of x^2 over x[0, n) (0 for n = 0), summed in double: sigma2 of the weighted
// quantizers' error weights importance * sqrt(sigma2 + x^2).
float mean_square(const float* x, int64_t n);

float fit_symmetric_scale(int n, int n_max, const float* x, int8_t* L, const float* weights);

// Symmetric levels in [-n_max, n_max - 1] with weights x[i]^2, refined one level at a time
// (up to 5 passes) while that improves the fit. Writes L[i] = level + n_max; returns the
// scale (0 for an all-zero group).
float fit_symmetric_scale_iterative(int n, int n_max, const float* x, int8_t* L);

// Asymmetric levels in [0, n_max] for x ~= scale * L - min_out, with min_out >= 0.
// Tries iscale = (n_max + rmin + rdelta * step) / (max - min) for step = 0..n_steps, and
// for each solves the weighted least-squares scale and min, keeping the one of least
// error (absolute if use_abs_error, else squared). `scratch` holds n levels.
// Returns the scale; *min_out receives the (non-negative) minimum to subtract.
float fit_scale_and_min(int n, int n_max, const float* x, const float* weights, uint8_t* L,
                        float* min_out, uint8_t* scratch, float rmin, float rdelta,
                        int n_steps, bool use_abs_error);

}  // namespace tokenmill::quant
