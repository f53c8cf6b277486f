#include "engine/draft_model.h"

#include <algorithm>
#include <unordered_set>

#include "base/log.h"
#include "base/timer.h"

namespace tokenmill::engine {

namespace {

int32_t blocks_for(int32_t n_positions) {
  return (n_positions + DraftModel::kBlockSize - 1) / DraftModel::kBlockSize;
}

int32_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int32_t>(i);
}

}  // namespace

DraftModel::DraftModel(model::Model& model, int32_t n_blocks)
    : model_(model), kv_(model.kv_shape(n_blocks, kBlockSize)), pool_(n_blocks) {
  // A few passes on one scratch block measure the cost of a pass before the first step
  // asks for it: with no measurement the allocator would never try a draft to get one.
  auto block = pool_.allocate();
  if (!block) return;
  for (int32_t n_tokens : {1, 1, 4, 4, 1, 4}) {
    model::Batch batch;
    batch.add_sequence(std::vector<int32_t>(static_cast<size_t>(n_tokens), 0), 0, {*block}, true);
    Timer timer;
    if (!model_.forward(batch, kv_, logits_, &picks_, /*argmax_only=*/true).ok()) break;
    pass_cost_.observe(n_tokens, timer.seconds());
  }
  pool_.release(*block);
}

int64_t DraftModel::kv_cache_bytes(const model::Model& model, int32_t n_blocks) {
  return model.kv_shape(n_blocks, kBlockSize).total_bytes();
}

void DraftModel::truncate(Cached& c, int32_t n_keep) {
  c.tokens.resize(static_cast<size_t>(n_keep));
  while (static_cast<int32_t>(c.table.size()) > blocks_for(n_keep)) {
    pool_.release(c.table.back());
    c.table.pop_back();
  }
}

void DraftModel::forget(Cached& c) {
  pool_.release(c.table);
  c.table.clear();
  c.tokens.clear();
}

bool DraftModel::reserve(Cached& c, int32_t n_positions, std::span<const Ask> keep) {
  const int32_t needed = blocks_for(n_positions) - static_cast<int32_t>(c.table.size());
  if (needed <= 0) return true;
  // References to the other entries stay valid while these are erased.
  for (auto it = cached_.begin(); it != cached_.end() && pool_.n_free() < needed;) {
    const uint64_t key = it->first;
    if (std::any_of(keep.begin(), keep.end(), [key](const Ask& a) { return a.key == key; })) {
      ++it;
      continue;
    }
    forget(it->second);
    it = cached_.erase(it);
  }
  auto ids = pool_.allocate(needed);
  if (!ids) return false;
  c.table.insert(c.table.end(), ids->begin(), ids->end());
  return true;
}

std::vector<std::vector<int32_t>> DraftModel::propose(std::span<const Ask> asks) {
  const size_t n_asks = asks.size();
  std::vector<std::vector<int32_t>> drafts(n_asks);
  std::vector<Cached*> caches(n_asks);
  std::vector<bool> dropped(n_asks, false);
  for (size_t i = 0; i < n_asks; ++i) {
    Cached& c = cached_[asks[i].key];
    caches[i] = &c;
    // The last token is always computed again: its logits give the first draft.
    const int32_t n_tokens = static_cast<int32_t>(asks[i].tokens.size());
    truncate(c, std::min(common_prefix(c.tokens, asks[i].tokens), n_tokens - 1));
  }
  auto run = [&](const model::Batch& batch) {
    Timer timer;
    const Status status = model_.forward(batch, kv_, logits_, &picks_, /*argmax_only=*/true);
    pass_cost_.observe(batch.n_tokens(), timer.seconds());
    if (status.ok()) return true;
    log_error("draft model: forward pass failed: " + status.to_string());
    for (Cached* c : caches) forget(*c);
    return false;
  };

  // Catch up: every token not in the cache yet, kCatchUpChunk positions per pass; the
  // pass that reaches a sequence's last token gives its first draft.
  for (;;) {
    model::Batch batch;
    std::vector<std::pair<size_t, int32_t>> runs;  // (ask, tokens added)
    std::vector<size_t> outputs;                   // the ask of each output row
    int32_t budget = kCatchUpChunk;
    for (size_t i = 0; i < n_asks && budget > 0; ++i) {
      Cached& c = *caches[i];
      const int32_t n_tokens = static_cast<int32_t>(asks[i].tokens.size());
      const int32_t done = static_cast<int32_t>(c.tokens.size());
      if (dropped[i] || done == n_tokens) continue;
      const int32_t n_run = std::min(n_tokens - done, budget);
      if (!reserve(c, done + n_run, asks)) {
        forget(c);
        dropped[i] = true;
        continue;
      }
      const bool last = done + n_run == n_tokens;
      const auto first = asks[i].tokens.begin() + done;
      batch.add_sequence(std::vector<int32_t>(first, first + n_run), done, c.table, last);
      runs.emplace_back(i, n_run);
      if (last) outputs.push_back(i);
      budget -= n_run;
    }
    if (runs.empty()) break;
    if (!run(batch)) return std::vector<std::vector<int32_t>>(n_asks);
    for (auto [i, n_run] : runs) {
      Cached& c = *caches[i];
      const auto first = asks[i].tokens.begin() + static_cast<int32_t>(c.tokens.size());
      c.tokens.insert(c.tokens.end(), first, first + n_run);
    }
    for (size_t row = 0; row < outputs.size(); ++row) drafts[outputs[row]].push_back(picks_[row]);
  }

  // Then one pass per further draft position, over every sequence that wants it.
  int32_t max_drafts = 0;
  for (size_t i = 0; i < n_asks; ++i) {
    if (!dropped[i]) max_drafts = std::max(max_drafts, asks[i].n_drafts);
  }
  for (int32_t r = 1; r < max_drafts; ++r) {
    model::Batch batch;
    std::vector<size_t> outputs;
    for (size_t i = 0; i < n_asks; ++i) {
      if (static_cast<int32_t>(drafts[i].size()) != r || asks[i].n_drafts <= r) continue;
      Cached& c = *caches[i];
      const int32_t position = static_cast<int32_t>(c.tokens.size());
      if (!reserve(c, position + 1, asks)) continue;  // it keeps the drafts it has
      batch.add_sequence({drafts[i].back()}, position, c.table, true);
      outputs.push_back(i);
    }
    if (outputs.empty()) break;
    if (!run(batch)) return std::vector<std::vector<int32_t>>(n_asks);
    for (size_t row = 0; row < outputs.size(); ++row) {
      const size_t i = outputs[row];
      caches[i]->tokens.push_back(drafts[i].back());
      drafts[i].push_back(picks_[row]);
    }
  }
  return drafts;
}

void DraftModel::retain(std::span<const uint64_t> live) {
  if (cached_.empty()) return;
  const std::unordered_set<uint64_t> keep(live.begin(), live.end());
  for (auto it = cached_.begin(); it != cached_.end();) {
    if (keep.contains(it->first)) {
      ++it;
      continue;
    }
    forget(it->second);
    it = cached_.erase(it);
  }
}

std::string draft_vocabulary_error(const model::Model& target, const tokenizer::Tokenizer& target_tokens,
                                   const model::Model& draft, const tokenizer::Tokenizer& draft_tokens) {
  const int32_t n_target = target.config().n_vocab, n_draft = draft.config().n_vocab;
  if (n_target != n_draft || target_tokens.n_vocab() != draft_tokens.n_vocab()) {
    return "the draft model has " + std::to_string(n_draft) + " tokens in its vocabulary, the model " +
           std::to_string(n_target) + ": a draft model must share the model's vocabulary";
  }
  for (int32_t id = 0; id < target_tokens.n_vocab(); ++id) {
    const std::string& a = target_tokens.token_piece(id, /*render_special=*/true);
    const std::string& b = draft_tokens.token_piece(id, /*render_special=*/true);
    if (a != b) {
      return "token " + std::to_string(id) + " is '" + a + "' for the model but '" + b +
             "' for the draft model: a draft model must share the model's vocabulary";
    }
  }
  return "";
}

}  // namespace tokenmill::engine
