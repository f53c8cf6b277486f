#include "quant/scale_search.h"

namespace tokenmill::quant {

namespace {

// The element of largest magnitude, sign kept; the first one wins a tie.
float signed_absmax(int n, const float* x, float* amax_out) {
  float amax = 0.0f;
  float value = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      value = x[i];
    }
  }
  *amax_out = amax;
  return value;
}

}  // namespace

float fit_symmetric_scale(int n, int n_max, const float* x, int8_t* L, const float* weights) {
  float amax;
  const float max = signed_absmax(n, x, &amax);
  if (amax < kGroupMaxEpsilon) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  auto weight = [&](int i) { return weights ? weights[i] : x[i] * x[i]; };

  // Levels for one candidate inverse scale, with the sums of the least-squares fit
  // scale = sum(w x l) / sum(w l^2).
  auto fit = [&](float inv_scale, float* sum_xl, float* sum_l2, int8_t* levels) {
    *sum_xl = 0.0f;
    *sum_l2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(round_to_int(inv_scale * x[i]), -n_max, n_max - 1);
      if (levels) levels[i] = static_cast<int8_t>(l + n_max);
      const float w = weight(i);
      *sum_xl += w * x[i] * static_cast<float>(l);
      *sum_l2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
  };

  float sum_xl, sum_l2;
  fit(static_cast<float>(-n_max) / max, &sum_xl, &sum_l2, L);
  float scale = sum_l2 != 0.0f ? sum_xl / sum_l2 : 0.0f;
  float best = scale * sum_xl;  // = sum_xl^2 / sum_l2, larger is a better fit
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    const float inv_scale = -(static_cast<float>(n_max) + 0.1f * static_cast<float>(step)) / max;
    fit(inv_scale, &sum_xl, &sum_l2, nullptr);
    if (sum_l2 > 0.0f && sum_xl * sum_xl > best * sum_l2) {
      fit(inv_scale, &sum_xl, &sum_l2, L);
      scale = sum_xl / sum_l2;
      best = scale * sum_xl;
    }
  }
  return scale;
}

float fit_symmetric_scale_iterative(int n, int n_max, const float* x, int8_t* L) {
  float amax;
  const float max = signed_absmax(n, x, &amax);
  if (amax < kGroupMaxEpsilon) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  const float inv_scale = static_cast<float>(-n_max) / max;
  float sum_xl = 0.0f;
  float sum_l2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(round_to_int(inv_scale * x[i]), -n_max, n_max - 1);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sum_xl += w * x[i] * static_cast<float>(l);
    sum_l2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  // Coordinate descent: move one level to its best value given all the others, and
  // keep the move if the fit quality sum_xl^2 / sum_l2 grows.
  for (int pass = 0; pass < 5; ++pass) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const float old_l = static_cast<float>(L[i]);
      float other_xl = sum_xl - w * x[i] * old_l;
      if (other_xl <= 0.0f) continue;
      float other_l2 = sum_l2 - w * old_l * old_l;
      const int new_l = clamp_int(round_to_int(x[i] * other_l2 / other_xl), -n_max, n_max - 1);
      if (new_l == L[i]) continue;
      other_xl += w * x[i] * static_cast<float>(new_l);
      other_l2 += w * static_cast<float>(new_l) * static_cast<float>(new_l);
      if (other_l2 > 0.0f && other_xl * other_xl * sum_l2 > sum_xl * sum_xl * other_l2) {
        L[i] = static_cast<int8_t>(new_l);
        sum_xl = other_xl;
        sum_l2 = other_l2;
        ++n_changed;
      }
    }
    if (n_changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + n_max);
  return sum_l2 > 0.0f ? sum_xl / sum_l2 : 0.0f;
}

float fit_scale_and_min(int n, int n_max, const float* x, const float* weights, uint8_t* L,
                        float* min_out, uint8_t* scratch, float rmin, float rdelta,
                        int n_steps, bool use_abs_error) {
  float min = x[0];
  float max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  if (min > 0.0f) min = 0.0f;  // the format can only subtract a minimum
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *min_out = -min;
    return 0.0f;
  }
  auto error_of = [&](float diff) { return use_abs_error ? std::fabs(diff) : diff * diff; };

  float inv_scale = static_cast<float>(n_max) / (max - min);
  float scale = 1.0f / inv_scale;
  float best_error = 0.0f;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(clamp_int(round_to_int(inv_scale * (x[i] - min)), 0, n_max));
    const float diff = scale * static_cast<float>(L[i]) + min - x[i];
    best_error += weights[i] * error_of(diff);
  }
  if (n_steps < 1) {
    *min_out = -min;
    return scale;
  }
  // Note: once a step improves the fit, later steps grid from the improved `min` (both
  // in the range and in the offset below); ggml does the same, and we must match it.
  for (int step = 0; step <= n_steps; ++step) {
    inv_scale = (rmin + rdelta * static_cast<float>(step) + static_cast<float>(n_max)) / (max - min);
    float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(round_to_int(inv_scale * (x[i] - min)), 0, n_max);
      scratch[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      const float level = static_cast<float>(l);
      sum_l += w * level;
      sum_l2 += w * level * level;
      sum_xl += w * level * x[i];
    }
    // Weighted least squares for x ~= scale * l + offset (offset <= 0).
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0.0f)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0.0f) {
      this_min = 0.0f;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float diff = this_scale * static_cast<float>(scratch[i]) + this_min - x[i];
      error += weights[i] * error_of(diff);
    }
    if (error < best_error) {
      for (int i = 0; i < n; ++i) L[i] = scratch[i];
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  *min_out = -min;
  return scale;
}

float mean_square(const float* x, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  return n > 0 ? static_cast<float>(sum / static_cast<double>(n)) : 0.0f;
}

}  // namespace tokenmill::quant
