// One forward pass's input: tokens of many sequences flattened into one list. Each token
// carries its position and its sequence; each sequence carries the table of KV blocks
// that hold (or will hold) its positions. Prefill and decode are the same thing here: a
// sequence contributes however many new tokens it has.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "ops/kv_storage.h"

namespace tokenmill::model {

struct Batch {
  std::vector<int32_t> tokens;             // [n_tokens]
  std::vector<int32_t> positions;          // [n_tokens]
  std::vector<int32_t> sequence_of_token;  // [n_tokens] index into block_tables
  std::vector<std::vector<int32_t>> block_tables;  // [n_sequences][blocks]
  // Indices into tokens whose logits are wanted, ascending (usually each sequence's last).
  std::vector<int32_t> output_tokens;
  // When set, the pass may stop early once *abandon is true (between layers, and between
  // slices of the output projection), and then reports ErrorCode::kAbandoned: the keys
  // and values of the batch's positions may be partly written, and nothing else is.
  const std::atomic<bool>* abandon = nullptr;

  bool abandoned() const { return abandon != nullptr && abandon->load(std::memory_order_relaxed); }

  int32_t n_tokens() const { return static_cast<int32_t>(tokens.size()); }

  // Appends a run of consecutive tokens of one sequence starting at position first_pos;
  // returns the sequence index. If want_last_logits, the run's last token is an output.
  int32_t add_sequence(const std::vector<int32_t>& run, int32_t first_pos, std::vector<int32_t> block_table,
                       bool want_last_logits);

  // Checks what the model relies on: token ids in range, every position covered by a
  // valid block id, outputs ascending and in range.
  Status validate(int32_t n_vocab, const ops::KvShape& kv) const;
};

}  // namespace tokenmill::model
