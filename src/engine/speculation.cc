#include "engine/speculation.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <utility>

namespace tokenmill::engine {

const char* spec_mode_name(SpecMode mode) {
  switch (mode) {
    case SpecMode::kOff: return "off";
    case SpecMode::kNgram: return "ngram";
    case SpecMode::kDraft: return "draft";
  }
  return "?";
}

const char* speculative_config_error(const SpeculativeConfig& config) {
  if (config.draft_max < 1 || config.draft_max > kMaxDrafts) return "draft_max must be in 1 .. 32";
  if (config.ngram_min < 1 || config.ngram_max < config.ngram_min || config.ngram_max > 64) {
    return "the n-gram lengths must satisfy 1 <= ngram_min <= ngram_max <= 64";
  }
  if (config.mode == SpecMode::kDraft && config.draft_model == nullptr) {
    return "a draft model is needed (--draft-model PATH)";
  }
  return "";
}

std::vector<int32_t> propose_ngram_drafts(std::span<const int32_t> tokens, int32_t ngram_min, int32_t ngram_max,
                                          int32_t max_drafts) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  for (int64_t len = std::min<int64_t>(ngram_max, n - 1); len >= ngram_min; --len) {
    const std::span<const int32_t> suffix = tokens.subspan(static_cast<size_t>(n - len));
    // Most recent occurrence first: the text being copied is usually the nearest one.
    for (int64_t start = n - len - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      const int64_t from = start + len;
      const int64_t count = std::min<int64_t>(max_drafts, n - from);
      return std::vector<int32_t>(tokens.begin() + from, tokens.begin() + from + count);
    }
  }
  return {};
}

std::vector<int32_t> PredictionTracker::propose(std::span<const int32_t> output, int32_t ngram_max,
                                                int32_t max_drafts) {
  for (; n_seen_ < output.size(); ++n_seen_) {
    if (cursor_ >= 0 && cursor_ < size() && prediction_[static_cast<size_t>(cursor_)] == output[n_seen_]) {
      ++cursor_;
    } else {
      cursor_ = -1;
    }
  }
  if (cursor_ < 0) anchor(output, ngram_max);
  if (cursor_ < 0 || cursor_ >= size()) return {};
  const int32_t count = std::min(max_drafts, size() - cursor_);
  return std::vector<int32_t>(prediction_.begin() + cursor_, prediction_.begin() + cursor_ + count);
}

void PredictionTracker::anchor(std::span<const int32_t> output, int32_t ngram_max) {
  const auto n = static_cast<int32_t>(output.size());
  for (int32_t len = std::min(ngram_max, n); len >= 1; --len) {
    const std::span<const int32_t> suffix = output.subspan(static_cast<size_t>(n - len));
    int32_t found = -1;
    for (int32_t start = 0; start + len <= size(); ++start) {
      if (!std::equal(suffix.begin(), suffix.end(), prediction_.begin() + start)) continue;
      found = start + len;
      break;
    }
    if (found >= 0) {
      cursor_ = found;
      return;
    }
  }
}

double AcceptanceEstimate::rate() const {
  return (accepted_ + kPriorAccepted) / (accepted_ + rejected_ + kPriorAccepted + kPriorRejected);
}

void AcceptanceEstimate::observe(int32_t proposed, int32_t accepted) {
  accepted_ = accepted_ * kKeep + accepted;
  rejected_ = rejected_ * kKeep + (accepted < proposed ? 1 : 0);
}

void AcceptanceEstimate::decay() {
  accepted_ *= kKeep;
  rejected_ *= kKeep;
}

double StepCostModel::step_seconds(int32_t n_tokens) const {
  // The prior: a fixed part of kPriorFixed positions' worth (a small decode step on a CPU
  // is mostly the read of the weights), as two pseudo-steps of weight kPriorWeight, kPriorSpan
  // positions apart, on the line through the measured mean. The steps measured soon
  // outweigh it; until several sizes were seen, it keeps one slow step from fixing a
  // slope that no later step would correct (a slope too steep stops the drafting that
  // would measure it).
  constexpr double kPriorFixed = 6.0, kPriorWeight = 3.0, kPriorSpan = 8.0;
  const double mean_x = w_ > 0 ? sx_ / w_ : 1.0;
  const double mean_y = w_ > 0 ? sy_ / w_ : 1.0;
  const double per_position = mean_y / (kPriorFixed + mean_x);
  double w = w_, sx = sx_, sy = sy_, sxx = sxx_, sxy = sxy_;
  for (const double x : {mean_x, mean_x + kPriorSpan}) {
    const double y = per_position * (kPriorFixed + x);
    w += kPriorWeight;
    sx += kPriorWeight * x;
    sy += kPriorWeight * y;
    sxx += kPriorWeight * x * x;
    sxy += kPriorWeight * x * y;
  }
  const double det = w * sxx - sx * sx;
  const double b = std::max(0.0, (w * sxy - sx * sy) / det);
  const double a = std::max(0.0, (sy - b * sx) / w);
  return a + b * n_tokens;
}

void StepCostModel::observe(int32_t n_tokens, double seconds) {
  // A step far slower than the line (the first of a new size grows buffers, the machine
  // was busy) would tilt the line for many steps: it counts as twice the line at most.
  if (w_ > 8) seconds = std::min(seconds, 2 * step_seconds(n_tokens));
  const double x = n_tokens;
  w_ = w_ * kKeep + 1;
  sx_ = sx_ * kKeep + x;
  sy_ = sy_ * kKeep + seconds;
  sxx_ = sxx_ * kKeep + x * x;
  sxy_ = sxy_ * kKeep + x * seconds;
}

double StepCostModel::break_even(int32_t n_produced, int32_t n_tokens, double drafting_seconds,
                                 double extra_seconds) const {
  // Throughput n_produced / (cost(n_tokens) + drafting) rises with one more position
  // accepted with chance r iff r > n_produced * (cost(n_tokens + 1) - cost(n_tokens) +
  // extra) / (cost(n_tokens) + drafting).
  const double cost = step_seconds(n_tokens) + drafting_seconds;
  if (cost <= 0) return 0.0;
  return n_produced * (step_seconds(n_tokens + 1) - step_seconds(n_tokens) + extra_seconds) / cost;
}

// A draft must beat the break-even by this factor: what the step model leaves out (the
// drafter's search, verifying and emitting the tokens) and the noise of both estimates
// would otherwise turn drafts near the break-even into a loss.
constexpr double kDraftMargin = 1.15;

std::vector<int32_t> allocate_drafts(std::span<const double> rates, std::span<const int32_t> limits, int32_t n_decode,
                                     const StepCostModel& cost, const StepCostModel* draft_pass) {
  std::vector<int32_t> drafts(rates.size(), 0);
  // (chance of the sequence's next draft, sequence), best first.
  std::priority_queue<std::pair<double, size_t>> next;
  for (size_t i = 0; i < rates.size(); ++i) {
    if (limits[i] > 0 && rates[i] > 0) next.push({rates[i], i});
  }
  double produced = n_decode;  // tokens the step is expected to yield
  int32_t positions = n_decode;
  int32_t n_passes = 0;          // draft-model passes opened so far (the deepest draft)
  double drafting = 0;           // their estimated seconds
  while (!next.empty()) {
    const auto [chance, i] = next.top();
    double extra = 0;
    if (draft_pass != nullptr) {
      const double one = draft_pass->step_seconds(1);
      extra = drafts[i] + 1 > n_passes ? one : draft_pass->step_seconds(2) - one;
    }
    if (chance <= kDraftMargin * cost.break_even(static_cast<int32_t>(produced), positions, drafting, extra)) break;
    next.pop();
    ++drafts[i];
    n_passes = std::max(n_passes, drafts[i]);
    drafting += extra;
    produced += chance;
    ++positions;
    if (drafts[i] < limits[i]) next.push({chance * rates[i], i});
  }
  return drafts;
}

}  // namespace tokenmill::engine
