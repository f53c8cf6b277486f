// tokenmill run -m MODEL -p PROMPT: generate from a prompt, streaming text to stdout and
// timing to stderr.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "base/thread_pool.h"
#include "cli/load_options.h"
#include "cli/commands.h"
#include "cli/kv_memory_check.h"
#include "cli/model_path.h"
#include "cli/draft_model_option.h"
#include "cli/run_speculative.h"
#include "cli/spec_options.h"
#include "engine/generator.h"
#include "model/model.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::cli {

namespace {

struct RunOptions {
  std::string model = "default";
  std::string prompt;
  std::string prompt_file;
  std::string system;
  bool chat = false;
  int32_t n_predict = 128;
  int32_t ctx_size = 4096;
  int n_threads = 0;
  bool show_prompt_tokens = false;
  bool no_tune = false;
  engine::SamplingParams sampling;
  long long seed = -1;
  engine::SpeculativeConfig speculative;
  std::string draft_model;
};

int fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

int run_generate(RunOptions options) {
  if (options.prompt.empty() && !options.prompt_file.empty()) {
    std::ifstream in(options.prompt_file, std::ios::binary);
    if (!in) return fail("cannot read prompt file '" + options.prompt_file + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    options.prompt = ss.str();
  }
  if (options.prompt.empty()) return fail("no prompt: pass -p TEXT or -f FILE");
  if (options.seed >= 0) {
    options.sampling.seed = static_cast<uint64_t>(options.seed);
  }
  if (Status s = options.sampling.validate(); !s.ok()) return fail(s.message());

  auto path = resolve_model_path(options.model);
  if (!path.ok()) return fail(path.status().message());
  model::LoadOptions load = load_options(options.n_threads);
  load.tune = !options.no_tune;
  auto model = model::load_model(*path, load);
  if (!model.ok()) return fail(model.status().to_string());
  auto tokenizer = tokenizer::Tokenizer::from_gguf((*model)->file());
  if (!tokenizer.ok()) return fail(tokenizer.status().to_string());

  std::vector<int32_t> prompt_tokens;
  if (options.chat) {
    auto chat_template = tokenizer::chat_template_for_model((*model)->file());
    if (!chat_template.ok()) return fail(chat_template.status().to_string());
    std::vector<tokenizer::ChatMessage> messages;
    if (!options.system.empty()) messages.push_back({"system", options.system});
    messages.push_back({"user", options.prompt});
    const auto& vocab = (*tokenizer)->vocab();
    auto piece = [&](int32_t id) { return id >= 0 ? (*tokenizer)->token_piece(id, true) : std::string(); };
    auto text = chat_template->render(messages, true, piece(vocab.bos_id), piece(vocab.eos_id));
    if (!text.ok()) return fail(text.status().to_string());
    // The template writes the BOS text itself, so nothing more is added.
    prompt_tokens = (*tokenizer)->encode(*text, /*add_special=*/false, /*parse_special=*/true);
  } else {
    prompt_tokens = (*tokenizer)->encode(options.prompt, /*add_special=*/true, /*parse_special=*/true);
  }
  if (options.show_prompt_tokens) {
    std::fprintf(stderr, "prompt tokens:");
    for (int32_t t : prompt_tokens) std::fprintf(stderr, " %d", t);
    std::fprintf(stderr, "\n");
  }

  auto draft = attach_draft_model(options.draft_model, **model, **tokenizer, options.speculative);
  if (!draft.ok()) return fail(draft.status().message());
  if (options.speculative.mode != engine::SpecMode::kOff) {
    if (const std::string e = engine::speculative_config_error(options.speculative); !e.empty()) {
      return fail("speculative decoding: " + e);
    }
    return run_speculative(**model, **tokenizer, prompt_tokens, options.sampling, options.n_predict, options.ctx_size,
                           options.speculative);
  }
  const int64_t kv_bytes = engine::Generator::kv_cache_bytes(**model, options.ctx_size);
  if (Status s = check_kv_memory(kv_bytes, "-c"); !s.ok()) return fail(s.message());
  engine::Generator generator(**model, **tokenizer, options.ctx_size);
  engine::GenerationOptions generation;
  generation.max_tokens = options.n_predict;
  auto stats = generator.generate(prompt_tokens, options.sampling, generation, [](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  std::printf("\n");
  if (!stats.ok()) return fail(stats.status().to_string());
  std::fprintf(stderr,
               "\nprompt tokens: %d, time to first token: %.1f ms, prompt: %.1f tok/s, generated: %d tokens, "
               "generation: %.1f tok/s, threads: %d\n",
               stats->n_prompt_tokens, stats->time_to_first_token_s * 1e3, stats->prompt_tokens_per_second(),
               stats->n_generated_tokens, stats->generation_tokens_per_second(), (*model)->backend().n_threads());
  return 0;
}

}  // namespace

void register_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  // llama.cpp's defaults, so the same flags give comparable output.
  o->sampling.temperature = 0.8f;
  o->sampling.top_k = 40;
  o->sampling.top_p = 0.95f;
  o->sampling.min_p = 0.05f;
  CLI::App* cmd = app.add_subcommand("run", "Generate text from a prompt");
  cmd->add_option("-m,--model", o->model, "GGUF file, or 'default'")->capture_default_str();
  cmd->add_option("-p,--prompt", o->prompt, "Prompt text");
  cmd->add_option("-f,--file", o->prompt_file, "Read the prompt from a file");
  cmd->add_option("-n,--n-predict", o->n_predict, "Tokens to generate at most")->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("-c,--ctx-size", o->ctx_size, "Context size (prompt + generated tokens)")->capture_default_str()
      ->check(CLI::Range(16, 1 << 20));
  cmd->add_option("-t,--threads", o->n_threads, "Threads (default: all CPUs)")->check(CLI::Range(0, 1024));
  cmd->add_option("--temp", o->sampling.temperature, "Temperature; 0 is greedy")->capture_default_str();
  cmd->add_option("--top-k", o->sampling.top_k, "Top-k; 0 disables")->capture_default_str();
  cmd->add_option("--top-p", o->sampling.top_p, "Top-p; 1 disables")->capture_default_str();
  cmd->add_option("--min-p", o->sampling.min_p, "Min-p; 0 disables")->capture_default_str();
  cmd->add_option("--repeat-penalty", o->sampling.repetition_penalty, "Repetition penalty; 1 disables")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Random seed (default: random)");
  cmd->add_flag("--chat", o->chat, "Wrap the prompt in the model's chat template");
  cmd->add_option("-s,--system", o->system, "System message (with --chat)");
  cmd->add_flag("--show-prompt-tokens", o->show_prompt_tokens, "Print the prompt's token ids to stderr");
  cmd->add_flag("--no-tune", o->no_tune, "Use the default kernel variants (no load-time tuning)");
  add_spec_options(cmd, o->speculative, o->draft_model);
  cmd->callback([o] { exit_code() = run_generate(*o); });
}

}  // namespace tokenmill::cli
