// Speculative decoding inside the batched step: a running sequence may carry draft
// tokens into a step, the forward pass scores its 1 + k positions with everyone else's
// tokens (the weights are still read once), and the drafts the target model agrees with
// are accepted, each a token gained for the price of one more position in the pass.
//
// What is here: the configuration, the n-gram (prompt lookup) drafter, and the two
// estimates that decide how many drafts pay (docs/speculative.md):
//   - AcceptanceEstimate: per sequence, the chance that its next draft is accepted,
//     from its recent verifications (decaying toward a prior, so a sequence whose drafts
//     failed is probed again later);
//   - StepCostModel: the cost of a step as fixed + per_token * tokens, fitted online to
//     the measured steps. A draft pays when its chance of acceptance is above the share
//     of the step's cost one more position adds (on a CPU a step of many sequences is
//     compute-bound, so there a draft must be nearly certain).
//
// Thread-safety: none; owned by the engine thread.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

namespace tokenmill::model {
class Model;
}  // namespace tokenmill::model

namespace tokenmill::engine {

// kDraft: a draft model's greedy continuation (engine/draft_model.h).
enum class SpecMode { kOff, kNgram, kDraft };

// Proposes up to max_drafts tokens to follow `tokens` (a sequence's prompt and output so
// far); fewer or none where it has no good guess. Called on the engine thread.
using DraftFn = std::function<std::vector<int32_t>(std::span<const int32_t> tokens, int32_t max_drafts)>;

struct SpeculativeConfig {
  SpecMode mode = SpecMode::kNgram;
  int32_t draft_max = 16;  // drafts per sequence and step, at most (1 .. kMaxDrafts)
  int32_t ngram_min = 2;  // suffix lengths the n-gram drafter matches, longest first
  int32_t ngram_max = 4;
  // Off: every eligible sequence carries as many drafts as the drafter finds, up to
  // draft_max, whatever they cost (for tests and for measuring what adaptation saves).
  bool adaptive = true;
  // Where the drafts come from; empty: the n-gram drafter (propose_ngram_drafts).
  DraftFn drafter;
  // kDraft: the draft model, with the target's vocabulary (draft_vocabulary_error); it
  // must outlive the engine, and runs on the engine thread between its forward passes.
  model::Model* draft_model = nullptr;
};

inline constexpr int32_t kMaxDrafts = 32;

// "ngram", "draft" or "off", as --spec takes them.
const char* spec_mode_name(SpecMode mode);

// Checks the ranges above; InvalidArgument-style message, or "" when valid.
const char* speculative_config_error(const SpeculativeConfig& config);

// The continuation of the most recent earlier occurrence of the longest suffix of
// `tokens` (ngram_max down to ngram_min tokens) found in `tokens` itself: at most
// max_drafts tokens, none when no suffix recurs.
std::vector<int32_t> propose_ngram_drafts(std::span<const int32_t> tokens, int32_t ngram_min, int32_t ngram_max,
                                          int32_t max_drafts);

// Verifies drafts by drawing: draw(j) gives the token plain decoding draws at the j-th
// position after the sequence, drafts[0 .. j) accepted before it. Returns the draws to
// emit, in order: one per accepted draft, then the first draw that differs from its draft
// (or, all accepted, the draw after the last). Each emitted token is what plain decoding
// would emit there, so it has plain decoding's distribution whatever the drafts; a draft x
// is accepted with the chance p(x). DrawResult has a `token` member (engine::Draw).
template <typename DrawResult, typename DrawFn>
std::vector<DrawResult> verify_by_drawing(std::span<const int32_t> drafts, DrawFn&& draw) {
  std::vector<DrawResult> out;
  for (size_t j = 0; j <= drafts.size(); ++j) {
    out.push_back(draw(j));
    if (j == drafts.size() || out.back().token != drafts[j]) break;
  }
  return out;
}

// OpenAI Predicted Outputs: the tokens the client expects the output to be, followed as
// the output grows. While the output has matched it since the last anchor, the drafts
// are the prediction's next tokens; where the output departs, the longest suffix of the
// output (up to ngram_max tokens) that occurs in the prediction re-anchors it, the first
// occurrence after the old place preferred.
class PredictionTracker {
 public:
  explicit PredictionTracker(std::vector<int32_t> prediction) : prediction_(std::move(prediction)) {}
  bool empty() const { return prediction_.empty(); }
  int32_t size() const { return static_cast<int32_t>(prediction_.size()); }
  // Up to max_drafts tokens to follow `output` (the tokens generated so far).
  std::vector<int32_t> propose(std::span<const int32_t> output, int32_t ngram_max, int32_t max_drafts);

 private:
  void anchor(std::span<const int32_t> output, int32_t ngram_max);
  std::vector<int32_t> prediction_;
  int32_t cursor_ = 0;   // the prediction's index of the next output token; -1: not aligned
  size_t n_seen_ = 0;    // output tokens followed so far
};

class AcceptanceEstimate {
 public:
  // P(the next draft is accepted | the ones before it were).
  double rate() const;
  // One verification: `accepted` of `proposed` drafts (the first rejection ends it).
  void observe(int32_t proposed, int32_t accepted);
  // A step without drafts: the evidence fades toward the prior.
  void decay();

 private:
  static constexpr double kPriorAccepted = 1.0, kPriorRejected = 1.0;
  static constexpr double kKeep = 0.9;  // weight of the past per verification or idle step
  double accepted_ = 0.0, rejected_ = 0.0;
};

class StepCostModel {
 public:
  // Seconds a step of n_tokens positions takes, as estimated so far.
  double step_seconds(int32_t n_tokens) const;
  // The step's tokens and its measured duration.
  void observe(int32_t n_tokens, double seconds);
  // The smallest acceptance chance at which one more draft position pays in a step that
  // already produces n_produced tokens over n_tokens positions, when drafting costs
  // drafting_seconds and the new draft adds extra_seconds to that (a draft model's passes).
  double break_even(int32_t n_produced, int32_t n_tokens, double drafting_seconds = 0,
                    double extra_seconds = 0) const;

 private:
  // Exponentially weighted sums for the least-squares line seconds = a + b * tokens.
  static constexpr double kKeep = 0.98;
  double w_ = 0, sx_ = 0, sy_ = 0, sxx_ = 0, sxy_ = 0;
};

// How many drafts each of a step's sequences should carry. rates[i]: sequence i's
// acceptance rate (0 for one that may not speculate), limits[i]: at most this many. The
// j-th draft of sequence i is accepted with chance rates[i]^j (all before it having
// been); drafts are added best chance first while that chance is above the break-even
// of the step as it grows (StepCostModel::break_even, from n_decode positions and tokens).
// With a draft model, draft_pass is the cost of one of its passes: the j-th drafts of
// all sequences are made by one pass, so a draft deeper than every other opens a pass
// (its fixed cost and one position) and any other adds a position to one.
std::vector<int32_t> allocate_drafts(std::span<const double> rates, std::span<const int32_t> limits, int32_t n_decode,
                                     const StepCostModel& cost, const StepCostModel* draft_pass = nullptr);

}  // namespace tokenmill::engine
