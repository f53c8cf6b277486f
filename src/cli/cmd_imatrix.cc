// tokenmill imatrix: runs a model over calibration text and saves, for every weight
// matrix, the sum of each input channel's squared activation (quant/imatrix_file.h) for
// `tokenmill quantize --imatrix`. Windows as in perplexity (eval/windows.h).
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "base/timer.h"
#include "cli/commands.h"
#include "cli/eval_setup.h"
#include "eval/imatrix_collector.h"
#include "eval/token_stats.h"
#include "eval/windows.h"

namespace tokenmill::cli {

namespace {

struct ImatrixOptions {
  std::string model = "default";
  std::string text_file;
  std::string output;
  int32_t n_ctx = 512;
  int32_t max_windows = 0;
  int n_threads = 0;
};

int fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

int run_imatrix(const ImatrixOptions& o) {
  auto m = load_eval_model(o.model, o.n_threads, /*repack=*/false);
  if (!m.ok()) return fail(m.status().to_string());
  auto tokens = tokenize_text_file(*m, o.text_file);
  if (!tokens.ok()) return fail(tokens.status().to_string());
  auto plan = eval::plan_windows(static_cast<int64_t>(tokens->size()), o.n_ctx, o.max_windows);
  if (!plan.ok()) return fail("calibration " + plan.status().message());

  eval::ImatrixCollector collector(*m->model);
  m->model->set_matmul_observer(
      [&collector](const ops::WeightMatrix& w, const float* x, int64_t n) { collector.observe(w, x, n); });
  const int32_t n_vocab = m->model->config().n_vocab;
  std::fprintf(stderr, "imatrix: %s, %zu tokens, %d windows of %d\n", m->path.c_str(), tokens->size(),
               plan->n_windows, plan->n_ctx);
  double sum_nll = 0;
  int64_t n_scored = 0;
  Timer timer;
  Status status = eval::run_windows(
      *m->model, *tokens, *plan, m->bos_id,
      [&](int32_t w, std::span<const int32_t> window, const std::vector<float>& logits) -> Status {
        for (int32_t i = 0; i < plan->n_scored_per_window(); ++i) {
          const std::span<const float> row(logits.data() + static_cast<size_t>(i) * n_vocab, n_vocab);
          sum_nll += eval::log_sum_exp(row) - row[window[plan->first_scored + i + 1]];
          ++n_scored;
        }
        std::fprintf(stderr, "[%d/%d] PPL so far %.4f (%.1f s)\n", w + 1, plan->n_windows,
                     std::exp(sum_nll / n_scored), timer.seconds());
        return {};
      });
  m->model->set_matmul_observer(nullptr);
  if (!status.ok()) return fail(status.to_string());

  quant::ImportanceMatrix& matrix = collector.matrix();
  matrix.datasets = {base_name(o.text_file)};
  matrix.n_chunks = static_cast<uint32_t>(plan->n_windows);
  matrix.chunk_size = static_cast<uint32_t>(plan->n_ctx);
  Status written = quant::write_importance_matrix(matrix, o.output);
  if (!written.ok()) return fail(written.message());
  std::printf("imatrix: %zu weight matrices from %d windows of %d tokens (%.1f s) -> %s\n", matrix.entries.size(),
              plan->n_windows, plan->n_ctx, timer.seconds(), o.output.c_str());
  return 0;
}

}  // namespace

void register_imatrix(CLI::App& app) {
  auto o = std::make_shared<ImatrixOptions>();
  CLI::App* cmd = app.add_subcommand("imatrix", "Collect activation statistics (an importance matrix) for quantize");
  cmd->add_option("-m,--model", o->model, "GGUF file, or 'default'")->capture_default_str();
  cmd->add_option("-f,--file", o->text_file, "Calibration text")->required();
  cmd->add_option("-o,--output", o->output, "Importance matrix to write (GGUF)")->required();
  cmd->add_option("-c,--ctx", o->n_ctx, "Window length in tokens")->capture_default_str()->check(CLI::Range(16, 1 << 20));
  cmd->add_option("--chunks", o->max_windows, "Use at most this many windows (0: all)")->check(CLI::Range(0, 1 << 30));
  cmd->add_option("-t,--threads", o->n_threads, "Threads (default: all CPUs)")->check(CLI::Range(0, 1024));
  cmd->callback([o] { exit_code() = run_imatrix(*o); });
}

}  // namespace tokenmill::cli
