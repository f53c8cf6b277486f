// tokenmill run with speculative decoding: the prompt goes through the serving engine
// (engine/engine.h) with its drafters instead of the single-sequence Generator, so that
// `run` gains what `serve` does; the text streams to stdout the same way.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/sampling_params.h"
#include "engine/speculation.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::cli {

// Generates up to max_tokens after `prompt`, writing the text to stdout and the timings
// (and the drafts accepted) to stderr. Returns the process exit code.
int run_speculative(model::Model& model, const tokenizer::Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                    const engine::SamplingParams& sampling, int32_t max_tokens, int32_t ctx_size,
                    const engine::SpeculativeConfig& speculative);

}  // namespace tokenmill::cli
