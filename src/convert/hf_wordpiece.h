// A WordPiece tokenizer (BERT's, in tokenizer.json) as the "bert" vocabulary llama.cpp
// reads: tokens that begin a word carry U+2581 before them, continuations lose their
// "##", bracketed tokens ([CLS], [SEP], [unused0], ...) are control tokens; [CLS] is
// the BOS and [SEP] the EOS token, both always added.
//
// Only uncased vocabularies are converted: the tokenizer layer lowercases and strips
// accents as BERT's uncased normalizer does.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "convert/hf_config.h"
#include "convert/hf_tokenizer.h"
#include "gguf/gguf_writer.h"

namespace tokenmill::convert {

// `tokenizer` is tokenizer.json (its model of type WordPiece), `tokenizer_config`
// tokenizer_config.json or null; `label` names tokenizer.json in messages.
Result<TokenizerSummary> write_wordpiece_tokenizer(const nlohmann::json& tokenizer, const nlohmann::json& tokenizer_config,
                                                   const HfConfig& config, const std::string& label,
                                                   gguf::Writer& writer);

}  // namespace tokenmill::convert
