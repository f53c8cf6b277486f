#include "engine/generator.h"

#include <algorithm>

#include "base/timer.h"
#include "engine/sampler.h"
#include "tokenizer/incremental_decoder.h"

namespace tokenmill::engine {

namespace {

constexpr int32_t kBlockSize = 16;

int32_t blocks_for(int32_t n_positions) { return (n_positions + kBlockSize - 1) / kBlockSize; }

Status check_prompt(const std::vector<int32_t>& prompt, int32_t n_vocab, int32_t max_context) {
  if (prompt.empty()) return invalid_argument("the prompt is empty");
  const int32_t n_prompt = static_cast<int32_t>(prompt.size());
  if (n_prompt >= max_context) {
    return invalid_argument("the prompt has " + std::to_string(n_prompt) + " tokens; the context holds " +
                            std::to_string(max_context) + " (raise --ctx-size)");
  }
  for (int32_t t : prompt) {
    if (t < 0 || t >= n_vocab) return invalid_argument("prompt token id out of range");
  }
  return {};
}

// Grows the block table until it covers n_positions.
Status ensure_blocks(kv::BlockPool& pool, std::vector<int32_t>& table, int32_t n_positions) {
  while (static_cast<int32_t>(table.size()) < blocks_for(n_positions)) {
    auto id = pool.allocate();
    if (!id) return resource_exhausted("the KV cache is full");
    table.push_back(*id);
  }
  return {};
}

}  // namespace

Generator::Generator(model::Model& model, const tokenizer::Tokenizer& tokenizer, int32_t max_context)
    : model_(model),
      tokenizer_(tokenizer),
      max_context_(max_context),
      kv_(model.kv_shape(blocks_for(max_context), kBlockSize)),
      pool_(blocks_for(max_context)) {}

int64_t Generator::kv_cache_bytes(const model::Model& model, int32_t max_context) {
  return model.kv_shape(blocks_for(max_context), kBlockSize).total_bytes();
}

Result<GenerationStats> Generator::generate(const std::vector<int32_t>& prompt, const SamplingParams& sampling,
                                            const GenerationOptions& options, const TextCallback& on_text) {
  TM_RETURN_IF_ERROR(sampling.validate());
  TM_RETURN_IF_ERROR(check_prompt(prompt, model_.config().n_vocab, max_context_));
  const int32_t n_prompt = static_cast<int32_t>(prompt.size());
  const int32_t max_tokens = std::min(options.max_tokens, max_context_ - n_prompt);

  // The sequence's block table grows as positions are filled; blocks go back at the end.
  std::vector<int32_t> table;
  struct Releaser {
    kv::BlockPool& pool;
    std::vector<int32_t>& table;
    ~Releaser() { pool.release(table); }
  } releaser{pool_, table};

  GenerationStats stats;
  stats.n_prompt_tokens = n_prompt;
  Sampler sampler(sampling);
  tokenizer::IncrementalDecoder decoder(tokenizer_);
  std::vector<int32_t> history(prompt);
  std::vector<float> logits;
  Timer timer;

  // Prompt: in chunks, logits only for the last token of the last chunk.
  for (int32_t begin = 0; begin < n_prompt; begin += options.prefill_chunk) {
    const int32_t end = std::min(n_prompt, begin + options.prefill_chunk);
    TM_RETURN_IF_ERROR(ensure_blocks(pool_, table, end));
    model::Batch batch;
    batch.add_sequence(std::vector<int32_t>(prompt.begin() + begin, prompt.begin() + end), begin, table,
                       end == n_prompt);
    TM_RETURN_IF_ERROR(model_.forward(batch, kv_, logits));
  }
  stats.prompt_seconds = timer.seconds();

  int32_t position = n_prompt;
  Timer generation_timer;
  while (stats.n_generated_tokens < max_tokens) {
    const int32_t token = sampler.sample(logits, history);
    ++stats.n_generated_tokens;
    if (stats.n_generated_tokens == 1) {
      stats.time_to_first_token_s = timer.seconds();
      generation_timer.reset();
    }
    if (options.stop_at_end_of_generation && tokenizer_.is_end_of_generation(token)) {
      stats.finish_reason = FinishReason::kStop;
      break;
    }
    stats.tokens.push_back(token);
    history.push_back(token);
    const std::string text = decoder.push(token);
    if (!text.empty() && !on_text(text)) {
      stats.finish_reason = FinishReason::kCancelled;
      break;
    }
    if (stats.n_generated_tokens == max_tokens) break;
    TM_RETURN_IF_ERROR(ensure_blocks(pool_, table, position + 1));
    model::Batch batch;
    batch.add_sequence({token}, position, table, true);
    TM_RETURN_IF_ERROR(model_.forward(batch, kv_, logits));
    ++position;
  }
  const std::string rest = decoder.flush();
  if (!rest.empty()) on_text(rest);
  stats.generation_seconds = stats.n_generated_tokens > 0 ? generation_timer.seconds() : 0;
  return stats;
}

}  // namespace tokenmill::engine
