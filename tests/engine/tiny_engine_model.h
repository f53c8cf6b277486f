// A tiny random model with a tiny SentencePiece-style vocabulary (control tokens, 256
// byte tokens, a few words), so engine tests run a real Model and a real Tokenizer in
// milliseconds per step.
#pragma once

#include <memory>

#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::engine::testing {

struct TinyEngineModel {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
};

// REQUIRES: nothing; aborts the test (ASSERT) on failure.
TinyEngineModel load_tiny_engine_model();

}  // namespace tokenmill::engine::testing
