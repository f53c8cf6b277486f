#include "model/batch.h"

#include <string>

namespace tokenmill::model {

int32_t Batch::add_sequence(const std::vector<int32_t>& run, int32_t first_pos, std::vector<int32_t> block_table,
                            bool want_last_logits) {
  const int32_t seq = static_cast<int32_t>(block_tables.size());
  block_tables.push_back(std::move(block_table));
  for (size_t i = 0; i < run.size(); ++i) {
    tokens.push_back(run[i]);
    positions.push_back(first_pos + static_cast<int32_t>(i));
    sequence_of_token.push_back(seq);
  }
  if (want_last_logits && !run.empty()) output_tokens.push_back(n_tokens() - 1);
  return seq;
}

Status Batch::validate(int32_t n_vocab, const ops::KvShape& kv) const {
  if (positions.size() != tokens.size() || sequence_of_token.size() != tokens.size()) {
    return invalid_argument("batch arrays have different lengths");
  }
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t] < 0 || tokens[t] >= n_vocab) {
      return invalid_argument("token id " + std::to_string(tokens[t]) + " is outside the vocabulary of " +
                              std::to_string(n_vocab));
    }
    const int32_t seq = sequence_of_token[t];
    if (seq < 0 || static_cast<size_t>(seq) >= block_tables.size()) return invalid_argument("bad sequence index");
    const int32_t pos = positions[t];
    if (pos < 0) return invalid_argument("negative position");
    const auto& table = block_tables[seq];
    const size_t n_needed = static_cast<size_t>(pos / kv.block_size) + 1;
    if (table.size() < n_needed) {
      return invalid_argument("position " + std::to_string(pos) + " has no KV block in its sequence's table");
    }
    for (size_t b = 0; b < n_needed; ++b) {
      if (table[b] < 0 || table[b] >= kv.n_blocks) return invalid_argument("KV block id out of range");
    }
  }
  for (size_t i = 0; i < output_tokens.size(); ++i) {
    if (output_tokens[i] < 0 || output_tokens[i] >= n_tokens() || (i > 0 && output_tokens[i] <= output_tokens[i - 1])) {
      return invalid_argument("output token indices must be ascending and inside the batch");
    }
  }
  return {};
}

}  // namespace tokenmill::model
