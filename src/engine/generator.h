// Generation for one sequence at a time: prompt in, sampled tokens out, streamed as
// text. This is what `tokenmill run` and `tokenmill bench` use; the serving engine
// (scheduler, continuous batching, prefix caching) builds on the same Model::forward.
//
// Thread-safety: one generate() at a time per Generator.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "engine/sampling_params.h"
#include "kv/block_pool.h"
#include "model/model.h"
#include "ops/kv_storage.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::engine {

struct GenerationOptions {
  int32_t max_tokens = 128;         // generated tokens at most
  int32_t prefill_chunk = 512;      // prompt tokens per forward pass
  bool stop_at_end_of_generation = true;
};

enum class FinishReason { kStop, kLength, kCancelled };

struct GenerationStats {
  int32_t n_prompt_tokens = 0;
  int32_t n_generated_tokens = 0;
  double time_to_first_token_s = 0;  // prompt processing plus the first sample
  double prompt_seconds = 0;
  double generation_seconds = 0;     // after the first token
  FinishReason finish_reason = FinishReason::kLength;
  std::vector<int32_t> tokens;       // the generated ids

  double prompt_tokens_per_second() const { return prompt_seconds > 0 ? n_prompt_tokens / prompt_seconds : 0; }
  // Tokens after the first, over the time after the first (as llama.cpp reports eval).
  double generation_tokens_per_second() const {
    return generation_seconds > 0 && n_generated_tokens > 1 ? (n_generated_tokens - 1) / generation_seconds : 0;
  }
};

// Receives each complete piece of text; returning false cancels generation.
using TextCallback = std::function<bool(std::string_view text)>;

class Generator {
 public:
  // max_context: prompt plus generated tokens the cache holds.
  Generator(model::Model& model, const tokenizer::Tokenizer& tokenizer, int32_t max_context);

  // The bytes of KV cache a generator for max_context positions commits when it is made.
  static int64_t kv_cache_bytes(const model::Model& model, int32_t max_context);

  Result<GenerationStats> generate(const std::vector<int32_t>& prompt, const SamplingParams& sampling,
                                   const GenerationOptions& options, const TextCallback& on_text);

  int32_t max_context() const { return max_context_; }

 private:
  model::Model& model_;
  const tokenizer::Tokenizer& tokenizer_;
  int32_t max_context_;
  ops::KvStorage kv_;
  kv::BlockPool pool_;
};

}  // namespace tokenmill::engine
