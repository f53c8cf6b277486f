// BERT encoders (sentence-transformers embedding models such as all-MiniLM-L6-v2) as
// llama.cpp's "bert" GGUF: the tensor names and shapes, the bert.* hyperparameters, and
// the pooling that sentence-transformers' 1_Pooling/config.json asks for.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "convert/hf_architectures.h"
#include "convert/hf_config.h"
#include "gguf/gguf_writer.h"

namespace tokenmill::convert {

std::vector<ExpectedTensor> bert_expected_tensors(const HfConfig& config);
// Names as BertModel saves them, with or without a "bert." prefix (BertFor* heads); the
// pooler and the position-id buffer are dropped.
Result<std::optional<TensorPlace>> bert_tensor_place(const HfConfig& config, const std::string& hf_name);
// Refuses what the encoder would compute differently (relative position embeddings, a
// decoder, another activation).
Status check_bert_config(const HfConfig& config);
// bert.* keys; bert.pooling_type from DIR/1_Pooling/config.json (mean where it is absent).
Status write_bert_metadata(const std::string& dir, const HfConfig& config, gguf::Writer& writer);

}  // namespace tokenmill::convert
