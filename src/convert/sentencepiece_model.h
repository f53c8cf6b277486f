// A SentencePiece model file (tokenizer.model, as Gemma, Llama 2 and Mistral 7B ship it):
// the protocol-buffer ModelProto, of which the converter needs the pieces (text, score,
// type), the normalizer's add_dummy_prefix and the trainer's model type and byte fallback.
// The file is untrusted input: every varint, length and field is bounds-checked, and
// fields the converter does not need are skipped by their wire type.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace tokenmill::convert {

struct SentencePiece {
  std::string text;
  float score = 0.0f;
  int32_t type = 1;  // NORMAL 1, UNKNOWN 2, CONTROL 3, USER_DEFINED 4, UNUSED 5, BYTE 6 (GGUF's token types)
};

struct SentencePieceModel {
  std::vector<SentencePiece> pieces;
  int32_t model_type = 1;         // trainer_spec.model_type: UNIGRAM 1, BPE 2, WORD 3, CHAR 4
  bool byte_fallback = false;     // trainer_spec.byte_fallback
  bool add_dummy_prefix = true;   // normalizer_spec.add_dummy_prefix
  std::string normalizer_name;    // normalizer_spec.name ("identity", "nmt_nfkc", ...)
};

Result<SentencePieceModel> parse_sentencepiece_model(std::span<const uint8_t> bytes, const std::string& label);
Result<SentencePieceModel> read_sentencepiece_model(const std::string& path);

}  // namespace tokenmill::convert
