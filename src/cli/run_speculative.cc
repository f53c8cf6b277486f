#include "cli/run_speculative.h"

#include <chrono>
#include <cstdio>

#include "cli/kv_memory_check.h"
#include "engine/engine.h"

namespace tokenmill::cli {

int run_speculative(model::Model& model, const tokenizer::Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                    const engine::SamplingParams& sampling, int32_t max_tokens, int32_t ctx_size,
                    const engine::SpeculativeConfig& speculative) {
  engine::EngineConfig config;
  config.ctx_total = ctx_size;
  config.max_context = ctx_size;
  config.max_seqs = 1;
  config.speculative = speculative;
  if (Status s = check_kv_memory(engine::Engine::kv_cache_bytes(model, config), "-c"); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  engine::Engine engine(model, tokenizer, config);
  engine::Request request;
  request.prompt = prompt;
  request.sampling = sampling;
  request.max_tokens = std::min<int64_t>(max_tokens, ctx_size - static_cast<int64_t>(prompt.size()));
  auto stream = engine.submit(request);
  if (!stream.ok()) {
    std::fprintf(stderr, "error: %s\n", stream.status().message().c_str());
    return 1;
  }
  engine::StreamEvent event;
  std::string error;
  while ((*stream)->wait_next(event, std::chrono::hours(24))) {
    std::fwrite(event.text.data(), 1, event.text.size(), stdout);
    std::fflush(stdout);
    if (!event.error.empty()) error = event.error;
  }
  std::printf("\n");
  if (!error.empty()) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return 1;
  }
  const engine::Usage usage = (*stream)->usage();
  const engine::EngineMetrics::Snapshot m = engine.metrics().snapshot();
  const double decode_s = usage.total_s - usage.time_to_first_token_s;
  std::fprintf(stderr,
               "\nprompt tokens: %zu, time to first token: %.1f ms, prompt: %.1f tok/s, generated: %d tokens, "
               "generation: %.1f tok/s, threads: %d\n",
               prompt.size(), usage.time_to_first_token_s * 1e3,
               usage.time_to_first_token_s > 0 ? prompt.size() / usage.time_to_first_token_s : 0.0,
               usage.completion_tokens,
               usage.completion_tokens > 1 && decode_s > 0 ? (usage.completion_tokens - 1) / decode_s : 0.0,
               model.backend().n_threads());
  std::fprintf(stderr, "speculation: %llu of %llu drafts accepted in %llu verifications\n",
               static_cast<unsigned long long>(m.spec_accepted_tokens_total),
               static_cast<unsigned long long>(m.spec_draft_tokens_total),
               static_cast<unsigned long long>(m.spec_drafts_total));
  return 0;
}

}  // namespace tokenmill::cli
