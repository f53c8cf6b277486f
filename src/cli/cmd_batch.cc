// tokenmill batch -m MODEL -i IN.jsonl -o OUT.jsonl [--errors ERR.jsonl]
// [--embedding-model EMBED.gguf]: a file of
// requests in OpenAI's batch format through the batching engine, offline, resumable
// (server/offline_batch.h). Ctrl-C stops between requests; running it again finishes
// the file.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>

#include "base/cpu_affinity.h"
#include "base/cpu_features.h"
#include "cli/chat_engine_options.h"
#include "cli/commands.h"
#include "cli/embedding_model.h"
#include "cli/offline_models.h"
#include "server/offline_batch.h"

namespace tokenmill::cli {

namespace {

struct BatchOptions {
  std::string model = "default";
  std::string input;
  std::string output;
  std::string errors;
  std::string embedding_model;
  // Offline every request is already waiting, so the engine runs this many sequences at
  // once unless --max-seqs says otherwise, with twice as many tokens per pass (decode
  // first, then the others' prompts): larger passes share each weight read among more
  // tokens (docs/batch.md).
  int max_in_flight = 128;
  bool quiet = false;
  ChatEngineOptions engine;
};

std::atomic<bool> g_interrupted{false};

void on_interrupt(int) {
  g_interrupted.store(true);
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

// One line redrawn in place on a terminal (every 2 s otherwise): done / total, requests
// per second of this run, time left.
class BatchProgressBar {
 public:
  explicit BatchProgressBar(bool enabled) : enabled_(enabled), tty_(isatty(STDERR_FILENO) != 0) {}

  void update(const server::OfflineBatchProgress& p, bool last) {
    if (!enabled_) return;
    if (!last && p.seconds - drawn_ < (tty_ ? 0.2 : 2.0)) return;
    drawn_ = p.seconds;
    const int64_t finished = p.completed + p.failed;
    const int64_t done = p.already_done + finished;
    const double fraction = p.total > 0 ? static_cast<double>(done) / static_cast<double>(p.total) : 1;
    const double rate = p.seconds > 0 ? static_cast<double>(finished) / p.seconds : 0;
    const double eta = rate > 0 ? static_cast<double>(p.total - done) / rate : 0;
    char line[200];
    std::snprintf(line, sizeof line, "  [%-30s] %5.1f%%  %lld/%lld  %.2f req/s  ETA %.0fs%s",
                  std::string(static_cast<size_t>(fraction * 30), '#').c_str(), 100 * fraction,
                  static_cast<long long>(done), static_cast<long long>(p.total), rate, eta,
                  p.failed > 0 ? ("  (" + std::to_string(p.failed) + " failed)").c_str() : "");
    std::fprintf(stderr, tty_ ? "\r%s\033[K" : "%s\n", line);
    if (last && tty_) std::fprintf(stderr, "\n");
  }

 private:
  const bool enabled_;
  const bool tty_;
  double drawn_ = -1e9;
};

int fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

int run_batch(const BatchOptions& options) {
  if (options.errors == options.output) return fail("--errors must name another file than -o");
  ChatEngineOptions engine_options = options.engine;
  if (engine_options.max_seqs <= 0) engine_options.max_seqs = options.max_in_flight;
  if (engine_options.max_batch_tokens <= 0) {
    engine_options.max_batch_tokens = std::max(engine::EngineConfig{}.max_batch_tokens, 2 * engine_options.max_seqs);
  }
  auto loaded = OfflineModels::load(engine_options, options.model, /*verbose=*/!options.quiet);
  if (!loaded.ok()) return fail(loaded.status().to_string());
  OfflineModels& models = **loaded;
  std::unique_ptr<EmbeddingModel> embeddings;
  if (!options.embedding_model.empty()) {
    const int n_threads = options.engine.n_threads > 0 ? options.engine.n_threads
                                                       : static_cast<int>(allowed_cpus().size());
    auto embedding_loaded = EmbeddingModel::load(options.embedding_model, n_threads, !options.quiet);
    if (!embedding_loaded.ok()) return fail("--embedding-model: " + embedding_loaded.status().to_string());
    embeddings = std::move(embedding_loaded).value();
    models.serve_embeddings(&embeddings->served());
  }
  if (!options.quiet) {
    std::fprintf(stderr, "kernels: %s on %s\nmodel %s: %d requests at once\n", cpu_features().kernel_set(),
                 cpu_brand().c_str(), models.model_name().c_str(), options.max_in_flight);
  }

  server::OfflineBatchConfig config;
  config.input = options.input;
  config.output = options.output;
  config.errors = options.errors;
  config.max_in_flight = options.max_in_flight;
  config.model = models.model_name();
  std::signal(SIGINT, on_interrupt);
  BatchProgressBar bar(!options.quiet);
  bool first = true;
  auto result = server::run_offline_batch(
      models.context(), models.strand(), config,
      [&](const server::OfflineBatchProgress& p) {
        if (first && p.already_done > 0 && !options.quiet) {
          std::fprintf(stderr, "resuming: %lld of %lld requests already in the output\n",
                       static_cast<long long>(p.already_done), static_cast<long long>(p.total));
        }
        first = false;
        bar.update(p, false);
      },
      g_interrupted);
  std::signal(SIGINT, SIG_DFL);
  if (embeddings) embeddings->shutdown();  // its answers still reach the models' strand
  if (!result.ok()) return fail(result.status().message());
  bar.update(*result, true);
  const int64_t left = result->total - result->already_done - result->completed - result->failed;
  std::fprintf(stderr, "%lld completed, %lld failed, %lld already done, %lld left in %.1f s%s\n",
               static_cast<long long>(result->completed), static_cast<long long>(result->failed),
               static_cast<long long>(result->already_done), static_cast<long long>(left), result->seconds,
               left > 0 ? " (interrupted: run the same command again to finish)" : "");
  return left > 0 ? 130 : 0;
}

}  // namespace

void register_batch(CLI::App& app) {
  auto o = std::make_shared<BatchOptions>();
  CLI::App* cmd = app.add_subcommand("batch", "Run a file of requests in OpenAI's batch format offline (resumable)");
  cmd->add_option("-m,--model", o->model, "GGUF file, a model of the store (NAME[:TAG]), or 'default'")
      ->capture_default_str();
  cmd->add_option("-i,--input", o->input, "JSONL: {custom_id, method, url, body} per line")->required();
  cmd->add_option("-o,--output", o->output, "JSONL results, appended as requests finish")->required();
  cmd->add_option("--errors", o->errors, "Failed requests' lines go here (default: into the output with the rest)");
  cmd->add_option("--embedding-model", o->embedding_model,
                  "A BERT-family GGUF that runs the /v1/embeddings lines (e.g. all-MiniLM-L6-v2)");
  cmd->add_option("--max-in-flight", o->max_in_flight, "Requests in the engine at once (1: one at a time)")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  cmd->add_flag("-q,--quiet", o->quiet, "No banner and no progress bar");
  add_chat_engine_options(cmd, o->engine);
  cmd->callback([o] { exit_code() = run_batch(*o); });
}

}  // namespace tokenmill::cli
