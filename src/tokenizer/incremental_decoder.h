// Streaming detokenization: tokens arrive one at a time and only whole UTF-8 characters
// come out, so a character spread over several byte tokens (an emoji as four <0xXX>
// tokens) is never cut in half in a stream.
//
// The concatenated output of push() and flush() equals Tokenizer::decode() of the same
// ids whenever that is valid UTF-8. Bytes that can never become a valid character are
// replaced by U+FFFD as soon as that is certain, so the stream is always valid UTF-8.
//
// Thread-safety: one decoder per sequence; not safe to share between threads.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace tokenmill::tokenizer {

class IncrementalDecoder {
 public:
  // REQUIRES: tokenizer outlives the decoder.
  explicit IncrementalDecoder(const Tokenizer& tokenizer, bool render_special = false);

  // Adds one token; returns the text that is now complete (possibly empty).
  std::string push(int32_t id);

  // Returns what is still held back (an unfinished character, as U+FFFD) and resets.
  std::string flush();

  // Bytes held back waiting for the rest of a character (0..3).
  size_t n_pending() const { return pending_.size(); }

 private:
  const Tokenizer* tokenizer_;
  bool render_special_;
  bool strip_space_;    // Tokenizer::strips_first_space(): drop the first token's space
  std::string pending_; // the incomplete start of a character
};

}  // namespace tokenmill::tokenizer
