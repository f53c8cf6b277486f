#include "engine/sequence.h"

#include <utility>

#include "engine/json_grammar.h"
#include "engine/json_schema.h"
#include "engine/reasoning_grammar.h"
#include "engine/tool_call_grammar.h"

namespace tokenmill::engine {

namespace {

// The per-choice parts: choices of one request draw different samples from one seed.
void init_choice(Sequence& seq, const tokenizer::Tokenizer& tokenizer) {
  SamplingParams params = seq.state->request.sampling;
  if (params.seed) params.seed = *params.seed + static_cast<uint64_t>(seq.choice);
  seq.sampler = std::make_unique<Sampler>(params);
  seq.decoder = std::make_unique<tokenizer::IncrementalDecoder>(tokenizer);
  seq.stop_filter = std::make_unique<StopStringFilter>(seq.state->request.stop);
  const Request& request = seq.state->request;
  if (request.tool_calls) {
    seq.json = std::make_unique<ToolCallGrammar>(request.tool_calls);
  } else if (request.json_schema) {
    seq.json = std::make_unique<JsonSchemaGrammar>(request.json_schema);
  } else if (request.json_object) {
    seq.json = std::make_unique<JsonGrammar>();
  }
  // Without a grammar or a budget the span needs nothing from the engine.
  if (request.reasoning && (seq.json || request.reasoning->budget >= 0)) {
    seq.json = std::make_unique<ReasoningGrammar>(request.reasoning, std::move(seq.json));
  }
  if (!seq.state->request.prediction.empty()) {
    seq.prediction = std::make_unique<PredictionTracker>(seq.state->request.prediction);
  }
}

}  // namespace

std::unique_ptr<Sequence> first_choice(std::shared_ptr<RequestState> state, uint64_t arrival,
                                       const tokenizer::Tokenizer& tokenizer) {
  auto seq = std::make_unique<Sequence>();
  seq->state = std::move(state);
  seq->choice = 0;
  seq->arrival = arrival;
  seq->tokens = seq->state->request.prompt;
  seq->n_prompt = static_cast<int32_t>(seq->tokens.size());
  init_choice(*seq, tokenizer);
  return seq;
}

std::unique_ptr<Sequence> next_choice(const Sequence& parent, int32_t choice, uint64_t arrival,
                                      kv::SequenceBlocks blocks, const tokenizer::Tokenizer& tokenizer) {
  auto seq = std::make_unique<Sequence>();
  seq->state = parent.state;
  seq->choice = choice;
  seq->arrival = arrival;
  seq->tokens = parent.tokens;
  seq->n_prompt = parent.n_prompt;
  seq->n_computed = parent.n_computed;
  seq->admitted_before = true;
  seq->next_prompt_logprob = parent.next_prompt_logprob;
  seq->pending_prompt_logprobs = parent.pending_prompt_logprobs;
  seq->blocks = std::move(blocks);
  init_choice(*seq, tokenizer);
  return seq;
}

}  // namespace tokenmill::engine
