#include "cli/chat_engine_options.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <thread>
#include <new>
#include <vector>

#include "base/cpu_affinity.h"
#include "cli/kv_memory_check.h"
#include "cli/kv_type_option.h"
#include "cli/load_options.h"
#include "cli/draft_model_option.h"
#include "cli/spec_options.h"
#include "engine/engine.h"
#include "model/model.h"
#include "server/served_model.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::cli {

namespace {

// The disk tier's start line, once its index is built (a few seconds at most: it hashes
// the model file first), so that it can say what it found.
void print_kv_disk_line(const engine::Engine& engine) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto state = engine.kv_disk_state();
  if (!state) return;
  while (state->folder.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    state = engine.kv_disk_state();
  }
  const kv::DiskStoreCounters& c = state->counters;
  std::fprintf(stderr, "KV disk tier: %s, %.2f of %.2f GiB, %lld blocks kept from before",
               state->folder.empty() ? "(still starting)" : state->folder.c_str(),
               static_cast<double>(c.usage_bytes) / (1ll << 30), static_cast<double>(c.max_bytes) / (1ll << 30),
               static_cast<long long>(c.n_blocks));
  if (c.stale_bytes_removed > 0) {
    std::fprintf(stderr, " (removed %.1f MiB of blocks of a previous version of the model)",
                 static_cast<double>(c.stale_bytes_removed) / (1 << 20));
  }
  std::fprintf(stderr, "\n");
}

}  // namespace

void add_chat_engine_options(CLI::App* cmd, ChatEngineOptions& o) {
  cmd->add_option("-t,--threads", o.n_threads, "Compute threads (default: all CPUs)")->check(CLI::Range(0, 1024));
  auto kv = cmd->add_option("--kv-memory", o.kv_memory_mib, "KV cache memory in MiB")->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--ctx-total", o.ctx_total, "KV cache size in token positions over all sequences")
      ->check(CLI::Range(16, 1 << 26))->excludes(kv);
  cmd->add_option("--max-batch-tokens", o.max_batch_tokens, "Tokens per forward pass (decode first, then prefill)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-seqs", o.max_seqs, "Sequences running at once")->check(CLI::Range(1, 4096));
  cmd->add_option("--max-context", o.max_context, "Prompt + generated tokens of one sequence")
      ->check(CLI::Range(16, 1 << 24));
  cmd->add_flag("--no-prefix-caching", o.no_prefix_caching, "Do not reuse KV blocks of shared prompt prefixes");
  cmd->add_flag("--no-pin-threads", o.no_pin_threads,
                "Leave thread placement to the OS (default: with one compute thread per CPU, pin them)");
  cmd->add_flag("--no-tune", o.no_tune,
                "Use the default kernel variants (default: chosen for this CPU at load, timed once, then cached)");
  cmd->add_flag("--no-window-kv", o.no_window_kv,
                "Keep every position in sliding-window layers too (default: only their window, same results)");
  add_kv_type_option(cmd, o.kv_type,
                     "How the KV cache stores keys and values: f16, or q8_0 (about half the memory and bytes read)");
  add_spec_options(cmd, o.speculative, o.draft_model);
  cmd->add_option("--kv-disk", o.kv_disk,
                  "Keep prefix-cache blocks on disk under DIR too, found again after eviction and restart "
                  "(without DIR: under the data dir)")
      ->expected(0, 1)->each([&o](const std::string&) { o.kv_disk_given = true; })
      ->trigger_on_parse();
  cmd->add_option("--kv-disk-size", o.kv_disk_gib, "GiB the --kv-disk blocks may take (least recently used go first)")
      ->capture_default_str()->check(CLI::Range(0.001, 1e6));
  cmd->add_option("--request-timeout", o.request_timeout_seconds,
                  "Seconds a request may wait and generate; then it ends as if cut by max_tokens (0: no limit)")
      ->capture_default_str()->check(CLI::Range(0.0, 7.0 * 86400));
  cmd->add_option("--batch-latency-factor", o.batch_latency_factor,
                  "While interactive requests are about, a step with batch work lasts at most this many one-token "
                  "steps (0: no limit)")
      ->capture_default_str()->check(CLI::Range(0.0, 1000.0));
  cmd->add_option("--chat-template-file", o.chat_template_file,
                  "A Jinja chat template to use in place of the model's own (e.g. one that fixes it)")
      ->check(CLI::ExistingFile);
}

bool pin_threads(const ChatEngineOptions& options, int n_compute) {
  const std::vector<int> cpus = allowed_cpus();
  return !options.no_pin_threads && cpus.size() >= 2 && static_cast<size_t>(n_compute) == cpus.size();
}

Result<std::unique_ptr<server::LoadedModel>> load_chat_model(const ChatEngineOptions& options, const std::string& path,
                                                             const std::string& name, bool verbose) {
  std::string chat_template;
  if (!options.chat_template_file.empty()) {
    std::ifstream in(options.chat_template_file, std::ios::binary);
    if (!in) return not_found("cannot read the chat template file '" + options.chat_template_file + "'");
    chat_template.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    auto parsed = tokenizer::ChatTemplate::parse(chat_template);
    if (!parsed.ok()) return invalid_argument(options.chat_template_file + ": " + parsed.status().message());
  }
  model::LoadOptions load = load_options(options.n_threads);
  load.tune = !options.no_tune;
  // The engine's default sequence limit (min(8192, trained)) unless --max-context says.
  load.max_context = options.max_context > 0 ? options.max_context : engine::EngineConfig{}.max_context;
  auto model = model::load_model(path, load);
  if (!model.ok()) return model.status();
  auto tokenizer = tokenizer::Tokenizer::from_gguf((*model)->file());
  if (!tokenizer.ok()) return tokenizer.status();

  engine::EngineConfig config;
  if (options.kv_memory_mib > 0) config.kv_memory_bytes = options.kv_memory_mib << 20;
  if (options.ctx_total > 0) config.ctx_total = options.ctx_total;
  if (options.max_batch_tokens > 0) config.max_batch_tokens = options.max_batch_tokens;
  if (options.max_seqs > 0) config.max_seqs = options.max_seqs;
  if (options.max_context > 0) config.max_context = options.max_context;
  const int32_t trained_context = (*model)->config().context_length;
  if (options.max_context <= 0 && trained_context > 0) config.max_context = std::min(config.max_context, trained_context);
  config.prefix_caching = !options.no_prefix_caching;
  config.window_kv = !options.no_window_kv;
  config.kv_type = options.kv_type;
  config.request_timeout_seconds = options.request_timeout_seconds;
  config.batch_latency_factor = options.batch_latency_factor;
  if (Status s = (*model)->check_kv_type(config.kv_type); !s.ok()) return s;
  if (options.kv_disk_given || !options.kv_disk.empty()) {
    config.kv_disk_dir = options.kv_disk.empty() ? options.kv_disk_default : options.kv_disk;
    if (config.kv_disk_dir.empty()) return invalid_argument("--kv-disk needs a folder here: --kv-disk DIR");
    if (!config.prefix_caching) return invalid_argument("--kv-disk keeps the prefix cache: it needs prefix caching on");
    config.kv_disk_bytes = static_cast<int64_t>(options.kv_disk_gib * (1ll << 30));
  }
  config.speculative = options.speculative;
  auto draft = attach_draft_model(options.draft_model, **model, **tokenizer, config.speculative);
  if (!draft.ok()) return draft.status();
  if (const std::string e = engine::speculative_config_error(config.speculative); !e.empty()) {
    return invalid_argument("speculative decoding: " + e);
  }
  // With a compute thread on every CPU the process may use, each thread gets its own CPU
  // and the HTTP threads share all but the engine thread's: left free, a woken HTTP thread
  // runs on the CPU of the engine thread that woke it (docs/serving.md).
  const std::vector<int> cpus = allowed_cpus();
  const int n_compute = (*model)->backend().n_threads();
  if (pin_threads(options, n_compute)) config.pinned_cpus = cpus;
  // The cache is committed at start: one that cannot fit is refused now, with the flags
  // that size it, rather than left to the kernel's out-of-memory killer.
  const int64_t kv_bytes = engine::Engine::kv_cache_bytes(**model, config);  // the draft's cache included
  const std::string kv_flags = "--kv-memory or --ctx-total";
  if (Status s = check_kv_memory(kv_bytes, kv_flags); !s.ok()) return s;
  auto loaded = std::make_unique<server::LoadedModel>();
  try {
    loaded->engine = std::make_unique<engine::Engine>(**model, **tokenizer, config);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("could not commit " + std::to_string(kv_bytes >> 20) +
                              " MiB of memory for the KV cache: lower " + kv_flags);
  }
  if (verbose) {
    const engine::Engine::PoolCounters kv = loaded->engine->pool_counters();
    std::fprintf(stderr, "KV cache: %.0f MiB (%s), %d positions over all sequences",
                 static_cast<double>(kv.kv_bytes) / (1 << 20), ops::kv_type_name(config.kv_type),
                 kv.n_blocks * config.block_size);
    if (kv.window > 0) {
      std::fprintf(stderr, " (sliding-window layers keep only each sequence's last %d)", kv.window);
    }
    std::fprintf(stderr, "\n");
    print_kv_disk_line(*loaded->engine);
  }
  loaded->kv_bytes = kv_bytes;
  loaded->memory_bytes = static_cast<int64_t>((*model)->file().file_size()) + (*model)->backend_extra_bytes() + kv_bytes;
  if (*draft) {
    loaded->memory_bytes += static_cast<int64_t>((*draft)->file().file_size());
    if (verbose) std::fprintf(stderr, "draft model: %s\n", options.draft_model.c_str());
  }
  loaded->model = std::move(model).value();
  loaded->draft_model = std::move(draft).value();
  loaded->tokenizer = std::move(tokenizer).value();
  loaded->served = std::make_unique<server::ServedModel>(path, *loaded->model, *loaded->tokenizer, *loaded->engine, name,
                                                         std::move(chat_template));
  return loaded;
}

}  // namespace tokenmill::cli
