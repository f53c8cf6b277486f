// A Hugging Face tokenizer (tokenizer.json, tokenizer_config.json, generation_config.json)
// as the tokenizer.ggml.* metadata llama.cpp reads: the vocabulary in id order with each
// token's type, the BPE merges, the pre-tokenizer's name, the special token ids, whether
// BOS is added, and the chat template.
//
// Supported: byte-level BPE (GPT-2 bytes, as Llama 3, Qwen 2/3 and most new models use),
// with the Llama 3, Qwen 2 or GPT-2 split pattern; and SentencePiece (Gemma, Llama 2,
// Mistral 7B), read from tokenizer.model for its scores and piece types; and WordPiece
// (BERT, hf_wordpiece.h). Anything else is refused by name.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "convert/hf_config.h"
#include "gguf/gguf_writer.h"

namespace tokenmill::convert {

// tokenizer.ggml.token_type values (tokenizer/vocab.h TokenType, which this layer may not
// include).
namespace gguf_token_type {
constexpr int32_t kNormal = 1;
constexpr int32_t kControl = 3;
constexpr int32_t kUserDefined = 4;
constexpr int32_t kUnused = 5;
}  // namespace gguf_token_type

struct TokenizerSummary {
  std::string model;  // tokenizer.ggml.model
  std::string pre;    // tokenizer.ggml.pre ("sentencepiece" for SentencePiece models)
  int64_t n_tokens = 0;
  int64_t n_merges = 0;
};

// Writes tokenizer.ggml.* for a model whose embedding has config.vocab_size rows: the
// vocabulary is padded with unused [PAD<id>] tokens up to it (models round it up), and a
// tokenizer with more tokens than rows is refused.
Result<TokenizerSummary> write_hf_tokenizer(const std::string& dir, const HfConfig& config, gguf::Writer& writer);

}  // namespace tokenmill::convert
