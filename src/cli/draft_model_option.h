// --draft-model PATH: the draft model of speculative decoding (engine/draft_model.h),
// loaded beside its target for `serve`, `batch`, `distill`, `run` and `bench`.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "engine/speculation.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::cli {

// With a path and speculation on, loads the draft model on the target's threads, checks
// that it shares the target's vocabulary, and points spec at it (mode draft). Returns
// null, changing nothing, when path is empty or speculation is off. The model returned
// must outlive every engine made with spec.
Result<std::unique_ptr<model::Model>> attach_draft_model(const std::string& path, model::Model& target,
                                                         const tokenizer::Tokenizer& target_tokens,
                                                         engine::SpeculativeConfig& spec);

}  // namespace tokenmill::cli
