#include "tokenizer/incremental_decoder.h"

#include "tokenizer/unicode.h"

namespace tokenmill::tokenizer {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

IncrementalDecoder::IncrementalDecoder(const Tokenizer& tokenizer, bool render_special)
    : tokenizer_(&tokenizer),
      render_special_(render_special),
      strip_space_(tokenizer.strips_first_space()) {}

std::string IncrementalDecoder::push(int32_t id) {
  if (id < 0 || id >= tokenizer_->n_vocab()) return {};
  std::string_view piece = tokenizer_->token_piece(id, render_special_);
  if (strip_space_ && id != tokenizer_->bos_id()) {
    if (!piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
    strip_space_ = false;
  }
  pending_.append(piece);

  std::string out;
  size_t pos = 0;
  while (pos < pending_.size()) {
    const int length = valid_utf8_sequence_at(pending_, pos);
    if (length < 0) break;  // a character whose remaining bytes have not arrived yet
    if (length == 0) {
      out += kReplacement;
      ++pos;
      continue;
    }
    out.append(pending_, pos, length);
    pos += length;
  }
  pending_.erase(0, pos);
  return out;
}

std::string IncrementalDecoder::flush() {
  std::string out;
  if (!pending_.empty()) out = kReplacement;  // an unfinished character is one bad char
  pending_.clear();
  return out;
}

}  // namespace tokenmill::tokenizer
