// A tiny random model with a tiny SentencePiece-style vocabulary (control tokens, 256
// byte tokens, a few words), so engine tests run a real Model and a real Tokenizer in
// milliseconds per step.
#pragma once

#include <cstdint>
#include <memory>

#include "base/thread_pool.h"

#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::engine::testing {

struct TinyEngineModel {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
};

// Draft models for the tiny model (which, with tied embeddings, mostly repeats its last
// token): the same weights rounded to 4 bits, whose guesses it accepts; or other random
// weights with an output matrix of their own, whose guesses it rejects.
enum class TinyDraft { kNone, kAgreeing, kDisagreeing };

// The tiny model, or one of its draft models computing on thread_pool.
// REQUIRES: nothing; aborts the test (ASSERT) on failure.
TinyEngineModel load_tiny_engine_model(TinyDraft draft = TinyDraft::kNone,
                                       std::shared_ptr<ThreadPool> thread_pool = nullptr);

}  // namespace tokenmill::engine::testing
