// How one request picks its next token. A plain value: the server fills it from a
// request, calls validate(), and hands it to a Sampler. Every "off" value is the default,
// so SamplingParams{} samples from softmax(logits) unchanged.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tokenmill::engine {

// OpenAI caps top_logprobs at 20; so do we.
inline constexpr int32_t kMaxTopLogprobs = 20;

struct SamplingParams {
  // Logits are divided by temperature before the draw. 0 = greedy: argmax (lowest id on
  // ties), no random draw.
  float temperature = 1.0f;
  // Keep only the top_k most likely tokens. 0 = off.
  int32_t top_k = 0;
  // Keep the smallest set of most likely tokens whose probability sums to >= top_p.
  // 1 = off. Must be in (0, 1].
  float top_p = 1.0f;
  // Drop tokens whose probability is below min_p * (probability of the most likely one).
  // 0 = off. Must be in [0, 1].
  float min_p = 0.0f;

  // llama.cpp's repetition penalty: each distinct token among the last penalty_last_n
  // previous tokens gets logit > 0 ? logit / penalty : logit * penalty. 1 = off.
  float repetition_penalty = 1.0f;
  // How far back the repetition penalty looks. -1 = all previous tokens, 0 = none.
  int32_t penalty_last_n = 64;
  // OpenAI's penalties over all previous tokens: logit -= count * frequency_penalty
  // + (count > 0) * presence_penalty. 0 = off. Must be in [-2, 2].
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;

  // OpenAI's logit_bias: (token, bias in [-100, 100]) added to the token's logit before
  // everything else; -100 bans the token outright.
  std::vector<std::pair<int32_t, float>> logit_bias;

  // Seed of the random draws. Unset = a fresh random seed per Sampler (which reports it).
  std::optional<uint64_t> seed;

  // Return log-probabilities of the chosen token, and of the top_logprobs most likely
  // tokens at each step (0..kMaxTopLogprobs).
  bool logprobs = false;
  int32_t top_logprobs = 0;

  bool is_greedy() const { return temperature == 0.0f; }
  // Whether the penalties change any logit: the repetition penalty (when it looks back at
  // all) and OpenAI's presence / frequency penalties.
  bool repetition_penalty_active() const { return repetition_penalty != 1.0f && penalty_last_n != 0; }
  bool openai_penalties_active() const { return presence_penalty != 0.0f || frequency_penalty != 0.0f; }
  bool has_penalties() const { return repetition_penalty_active() || openai_penalties_active(); }
  // The draw is then first_max_index(logits) (base/first_max.h), whatever else is set.
  bool picks_first_max() const { return is_greedy() && !has_penalties() && logit_bias.empty(); }

  // InvalidArgument naming the first field out of range, its allowed range and the value
  // found; OK otherwise. Rejects NaN and infinities in every float field.
  Status validate() const;
};

}  // namespace tokenmill::engine
