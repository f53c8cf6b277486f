// What perplexity and imatrix share: a model with its tokenizer, and a text file read
// whole and tokenized the way llama.cpp's perplexity tool does (BOS first when the
// vocabulary asks for it, special-token text kept as plain text).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::cli {

struct EvalModel {
  std::string path;
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  int32_t bos_id = -1;  // put at the start of every window; -1 when the model adds none
};

// repack: model::LoadOptions::repack. Off for the commands whose matmul observers name a
// weight by where the file holds it (imatrix, quantize with GPTQ).
Result<EvalModel> load_eval_model(const std::string& spec, int n_threads, bool repack);

// The file's tokens; fails for an unreadable or empty file.
Result<std::vector<int32_t>> tokenize_text_file(const EvalModel& m, const std::string& path);

}  // namespace tokenmill::cli
