#include "engine/draft_proposer.h"

#include <algorithm>
#include <span>

namespace tokenmill::engine {

DraftProposer::DraftProposer(SpeculativeConfig config, int32_t max_context, int32_t n_draft_blocks)
    : config_(std::move(config)), max_context_(max_context) {
  if (config_.mode == SpecMode::kDraft) draft_model_ = std::make_unique<DraftModel>(*config_.draft_model, n_draft_blocks);
}

bool DraftProposer::may_speculate(const Sequence& s) const {
  const Request& r = s.state->request;
  const bool has_drafter = config_.mode != SpecMode::kOff || s.prediction != nullptr;
  return has_drafter && r.speculative && s.n_pending() == 1 && s.n_generated >= 1 && !s.forks_on_next_draw();
}

void DraftProposer::propose(const std::vector<std::unique_ptr<Sequence>>& running) {
  std::vector<double> rates(running.size(), 0.0);
  std::vector<int32_t> limits(running.size(), 0);
  int32_t n_decode = 0;
  for (size_t i = 0; i < running.size(); ++i) {
    Sequence& s = *running[i];
    s.drafts.clear();
    n_decode += s.n_pending() == 1;
    if (!may_speculate(s)) continue;
    const Request& r = s.state->request;
    const int32_t left = std::min(r.max_tokens - s.n_generated, max_context_ - static_cast<int32_t>(s.tokens.size()));
    rates[i] = s.acceptance.rate();
    limits[i] = std::min(config_.draft_max, left - 1);
  }
  const StepCostModel* draft_pass = draft_model_ ? &draft_model_->pass_cost() : nullptr;
  const std::vector<int32_t> k =
      config_.adaptive ? allocate_drafts(rates, limits, n_decode, step_cost_, draft_pass) : limits;
  std::vector<DraftModel::Ask> asks;
  std::vector<Sequence*> asking;
  for (size_t i = 0; i < running.size(); ++i) {
    Sequence& s = *running[i];
    if (limits[i] <= 0) continue;
    if (k[i] == 0) {
      s.acceptance.decay();  // not worth it now: let the evidence fade, to try again later
      continue;
    }
    s.drafts = draft(s, k[i]);
    if (static_cast<int32_t>(s.drafts.size()) > k[i]) s.drafts.resize(static_cast<size_t>(k[i]));
    if (s.drafts.empty() && draft_model_) {
      asks.push_back({s.arrival, s.tokens, k[i]});
      asking.push_back(&s);
    }
  }
  if (asks.empty()) return;
  std::vector<std::vector<int32_t>> drafts = draft_model_->propose(asks);
  for (size_t i = 0; i < asking.size(); ++i) asking[i]->drafts = std::move(drafts[i]);
}

void DraftProposer::forget_departed(const std::vector<std::unique_ptr<Sequence>>& running) {
  if (!draft_model_ || draft_model_->n_cached_sequences() == 0) return;
  std::vector<uint64_t> live;
  live.reserve(running.size());
  for (const auto& s : running) live.push_back(s->arrival);
  draft_model_->retain(live);
}

std::vector<int32_t> DraftProposer::draft(Sequence& s, int32_t k) const {
  s.drafts_from_prediction = false;
  if (s.prediction) {
    const auto output = std::span<const int32_t>(s.tokens).subspan(static_cast<size_t>(s.n_prompt));
    std::vector<int32_t> drafts = s.prediction->propose(output, config_.ngram_max, k);
    if (!drafts.empty()) {
      s.drafts_from_prediction = true;
      return drafts;
    }
  }
  if (config_.mode == SpecMode::kOff || config_.mode == SpecMode::kDraft) return {};
  if (config_.drafter) return config_.drafter(s.tokens, k);
  return propose_ngram_drafts(s.tokens, config_.ngram_min, config_.ngram_max, k);
}

void DraftProposer::observe_step(int32_t n_tokens, size_t n_outputs, double seconds) {
  // Draft positions cost what decode positions do (each is an output row, through the
  // output projection): the line is fitted to steps made only of such positions.
  if (n_outputs == static_cast<size_t>(n_tokens)) step_cost_.observe(n_tokens, seconds);
}

void DraftProposer::verified(Sequence& s, int32_t k, int32_t accepted, EngineMetrics& metrics) const {
  metrics.add_speculation(k, accepted);
  s.acceptance.observe(k, accepted);
  if (s.drafts_from_prediction) s.state->n_accepted_prediction += accepted;
}

}  // namespace tokenmill::engine
