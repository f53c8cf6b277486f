#include "engine/sampling_params.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace tokenmill::engine {
namespace {

// "%g" keeps 0.5 as "0.5", not std::to_string's "0.500000".
std::string format_value(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

Status out_of_range(const char* field, const std::string& allowed, double found) {
  return invalid_argument(std::string(field) + " must be " + allowed + ", got " +
                          format_value(found));
}

}  // namespace

Status SamplingParams::validate() const {
  // Written as !(in range) so that NaN fails every check.
  if (!(std::isfinite(temperature) && temperature >= 0.0f)) {
    return out_of_range("temperature", "a finite number >= 0 (0 = greedy)", temperature);
  }
  if (top_k < 0) return out_of_range("top_k", ">= 0 (0 = off)", top_k);
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return out_of_range("top_p", "in (0, 1] (1 = off)", top_p);
  }
  if (!(min_p >= 0.0f && min_p <= 1.0f)) {
    return out_of_range("min_p", "in [0, 1] (0 = off)", min_p);
  }
  if (!(std::isfinite(repetition_penalty) && repetition_penalty > 0.0f)) {
    return out_of_range("repetition_penalty", "a finite number > 0 (1 = off)",
                        repetition_penalty);
  }
  if (penalty_last_n < -1) {
    return out_of_range("penalty_last_n", ">= -1 (-1 = all previous tokens, 0 = off)",
                        penalty_last_n);
  }
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) {
    return out_of_range("presence_penalty", "in [-2, 2] (0 = off)", presence_penalty);
  }
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
    return out_of_range("frequency_penalty", "in [-2, 2] (0 = off)", frequency_penalty);
  }
  for (const auto& [token, bias] : logit_bias) {
    if (!(bias >= -100.0f && bias <= 100.0f)) return out_of_range("logit_bias", "values in [-100, 100]", bias);
  }
  if (top_logprobs < 0 || top_logprobs > kMaxTopLogprobs) {
    return out_of_range("top_logprobs", "in [0, " + std::to_string(kMaxTopLogprobs) + "]",
                        top_logprobs);
  }
  return Status::ok_status();
}

}  // namespace tokenmill::engine
