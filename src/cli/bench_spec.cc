#include "cli/bench_spec.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/cpu_features.h"
#include "cli/draft_model_option.h"
#include "cli/eval_setup.h"
#include "engine/engine.h"

namespace tokenmill::cli {

namespace {

constexpr const char* kPassage =
    "The river town of Alder Bend was founded in 1843 by ferrymen who carried grain across the Wide Water. "
    "In 1871 a stone bridge replaced the ferries, and the town grew around its market square. The great "
    "flood of 1902 destroyed the mill and half of the houses on the east bank; they were rebuilt in brick "
    "by 1910. Today Alder Bend has 12,400 inhabitants, a grain museum in the old customs house, and a "
    "festival every September that celebrates the first crossing.";

struct Case {
  const char* name;
  std::string text;
};

std::vector<Case> cases() {
  return {{"copy", std::string("<start_of_turn>user\nRepeat this text exactly:\n\n") + kPassage +
                       "<end_of_turn>\n<start_of_turn>model\n"},
          {"free", "<start_of_turn>user\nWrite a short story about a lighthouse keeper who finds a message "
                   "in a bottle.<end_of_turn>\n<start_of_turn>model\n"}};
}

struct Measured {
  double tok_s = 0;  // decode speed: tokens after the first over the time after it
  std::vector<int32_t> tokens;
};

Measured generate(engine::Engine& engine, const std::vector<int32_t>& prompt, int32_t n_gen, bool speculative) {
  engine::Request r;
  r.prompt = prompt;
  r.sampling.temperature = 0;
  r.max_tokens = n_gen;
  r.speculative = speculative;
  Measured m;
  auto stream = engine.submit(r);
  if (!stream.ok()) return m;
  engine::StreamEvent event;
  while ((*stream)->wait_next(event, std::chrono::minutes(10))) {
    m.tokens.insert(m.tokens.end(), event.token_ids.begin(), event.token_ids.end());
  }
  const engine::Usage usage = (*stream)->usage();
  const double decode_s = usage.total_s - usage.time_to_first_token_s;
  if (usage.completion_tokens > 1 && decode_s > 0) m.tok_s = (usage.completion_tokens - 1) / decode_s;
  return m;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int run_spec_bench(const SpecBenchOptions& o) {
  auto loaded = load_eval_model(o.model, o.n_threads, /*repack=*/true);
  if (!loaded.ok()) {
    std::fprintf(stderr, "error: %s\n", loaded.status().to_string().c_str());
    return 1;
  }
  model::Model& model = *loaded->model;
  const tokenizer::Tokenizer& tokenizer = *loaded->tokenizer;
  engine::EngineConfig config;
  config.ctx_total = 4096;
  config.max_context = 2048;
  config.speculative = o.speculative;
  auto draft = attach_draft_model(o.draft_model, model, tokenizer, config.speculative);
  if (!draft.ok()) {
    std::fprintf(stderr, "error: %s\n", draft.status().message().c_str());
    return 1;
  }
  if (const std::string e = engine::speculative_config_error(config.speculative); !e.empty()) {
    std::fprintf(stderr, "error: speculative decoding: %s\n", e.c_str());
    return 1;
  }
  engine::Engine engine(model, tokenizer, config);
  std::fprintf(stderr, "kernels: %s on %s\n", cpu_features().kernel_set(), cpu_brand().c_str());

  nlohmann::json results = nlohmann::json::array();
  for (const Case& c : cases()) {
    const std::vector<int32_t> prompt = tokenizer.encode(c.text, /*add_special=*/true, /*parse_special=*/true);
    generate(engine, prompt, 8, false);  // warm-up (and the prompt into the prefix cache)
    std::vector<double> plain, spec, ratios;
    const auto before = engine.metrics().snapshot();
    bool same = true;
    for (int i = 0; i < o.repetitions; ++i) {
      const Measured a = generate(engine, prompt, o.n_gen, false);
      const Measured b = generate(engine, prompt, o.n_gen, true);
      same = same && a.tokens == b.tokens;
      plain.push_back(a.tok_s);
      spec.push_back(b.tok_s);
      ratios.push_back(a.tok_s > 0 ? b.tok_s / a.tok_s : 0.0);
    }
    const auto after = engine.metrics().snapshot();
    const double drafts = static_cast<double>(after.spec_draft_tokens_total - before.spec_draft_tokens_total);
    const double accepted = static_cast<double>(after.spec_accepted_tokens_total - before.spec_accepted_tokens_total);
    const double verifications = static_cast<double>(after.spec_drafts_total - before.spec_drafts_total);
    const double acceptance = drafts > 0 ? accepted / drafts : 0.0;
    const double mean_accepted = verifications > 0 ? accepted / verifications : 0.0;
    results.push_back({{"case", c.name}, {"plain_tok_s", median(plain)}, {"spec_tok_s", median(spec)},
                       {"speedup", median(ratios)}, {"acceptance_rate", acceptance},
                       {"mean_accepted_length", mean_accepted}, {"same_tokens", same}});
    if (!o.json) {
      std::printf("%-5s tg%-4d  plain %7.1f tok/s  spec %7.1f tok/s  %.2fx  acceptance %3.0f%%  mean accepted %.2f%s\n",
                  c.name, o.n_gen, median(plain), median(spec), median(ratios), 100 * acceptance, mean_accepted,
                  same ? "" : "  (tokens differ!)");
    }
    if (!same) {
      std::fprintf(stderr, "error: speculation changed the tokens of the %s case\n", c.name);
      return 1;
    }
  }
  if (o.json) std::printf("%s\n", results.dump(2).c_str());
  return 0;
}

}  // namespace tokenmill::cli
