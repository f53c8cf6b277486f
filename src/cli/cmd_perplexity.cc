// tokenmill perplexity: perplexity of a model on a text, and — against reference logits
// saved by an earlier run (usually of the F32/F16 reference model) — how far the model's
// next-token distributions have moved: KL divergence, top-1 agreement, and the change in
// the correct token's probability.
//
// Windows and scoring follow llama.cpp's perplexity tool (eval/windows.h): non-overlapping
// windows of --ctx tokens starting with BOS, the second half of each scored.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/timer.h"
#include "cli/commands.h"
#include "cli/eval_setup.h"
#include "cli/kv_type_option.h"
#include "eval/logits_file.h"
#include "eval/token_stats.h"
#include "eval/windows.h"
#include "ops/kv_storage.h"

namespace tokenmill::cli {

namespace {

struct PerplexityOptions {
  std::string model = "default";
  std::string text_file;
  int32_t n_ctx = 512;
  int32_t max_windows = 0;
  int n_threads = 0;
  std::string save_logits;
  std::string kl_base;
  int32_t top_k = 1024;
  bool json = false;
  ops::KvType kv_type = ops::KvType::kF16;
};

int fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

// The reference must have scored the same windows of the same tokens.
Status check_reference(const eval::LogitsFile& base, const eval::WindowPlan& plan, int32_t n_vocab,
                       const std::vector<std::vector<int32_t>>& windows) {
  const eval::LogitsFileHeader& h = base.header();
  if (static_cast<int32_t>(h.n_vocab) != n_vocab) {
    return invalid_argument("the reference logits have a vocabulary of " + std::to_string(h.n_vocab) +
                            ", the model " + std::to_string(n_vocab));
  }
  if (static_cast<int32_t>(h.n_ctx) != plan.n_ctx || static_cast<int32_t>(h.first_scored) != plan.first_scored) {
    return invalid_argument("the reference logits were made with --ctx " + std::to_string(h.n_ctx) +
                            "; run with the same context");
  }
  for (size_t w = 0; w < windows.size(); ++w) {
    const auto ref = base.tokens().subspan(w * plan.n_ctx, plan.n_ctx);
    if (!std::equal(ref.begin(), ref.end(), windows[w].begin())) {
      return invalid_argument("the reference logits were computed on other tokens (window " + std::to_string(w) +
                              " differs): use the same text file and a model with the same tokenizer");
    }
  }
  return {};
}

int run_perplexity(const PerplexityOptions& o) {
  auto m = load_eval_model(o.model, o.n_threads, /*repack=*/true);
  if (!m.ok()) return fail(m.status().to_string());
  auto tokens = tokenize_text_file(*m, o.text_file);
  if (!tokens.ok()) return fail(tokens.status().to_string());
  auto planned = eval::plan_windows(static_cast<int64_t>(tokens->size()), o.n_ctx, o.max_windows);
  if (!planned.ok()) return fail(planned.status().message());
  eval::WindowPlan plan = *planned;
  const int32_t n_vocab = m->model->config().n_vocab;
  const ops::KvType kv_type = o.kv_type;
  if (Status s = m->model->check_kv_type(kv_type); !s.ok()) return fail(s.message());

  std::unique_ptr<eval::LogitsFile> base;
  if (!o.kl_base.empty()) {
    auto read = eval::LogitsFile::read(o.kl_base);
    if (!read.ok()) return fail(read.status().message());
    base = std::make_unique<eval::LogitsFile>(std::move(read).value());
    plan.n_windows = std::min<int32_t>(plan.n_windows, static_cast<int32_t>(base->header().n_windows));
  }
  std::vector<std::vector<int32_t>> windows;
  std::vector<int32_t> all_window_tokens;
  for (int32_t w = 0; w < plan.n_windows; ++w) {
    windows.push_back(eval::window_tokens(*tokens, plan, w, m->bos_id));
    all_window_tokens.insert(all_window_tokens.end(), windows.back().begin(), windows.back().end());
  }
  if (base) {
    Status s = check_reference(*base, plan, n_vocab, windows);
    if (!s.ok()) return fail(s.message());
  }
  std::unique_ptr<eval::LogitsFileWriter> writer;
  if (!o.save_logits.empty()) {
    eval::LogitsFileHeader header;
    header.n_vocab = static_cast<uint32_t>(n_vocab);
    header.n_ctx = static_cast<uint32_t>(plan.n_ctx);
    header.first_scored = static_cast<uint32_t>(plan.first_scored);
    header.n_windows = static_cast<uint32_t>(plan.n_windows);
    header.top_k = static_cast<uint32_t>(std::min(o.top_k, n_vocab));
    auto created = eval::LogitsFileWriter::create(o.save_logits, header, all_window_tokens);
    if (!created.ok()) return fail(created.status().message());
    writer = std::move(created).value();
  }

  std::fprintf(stderr, "perplexity: %s, %zu tokens, %d windows of %d, scoring %d per window\n", m->path.c_str(),
               tokens->size(), plan.n_windows, plan.n_ctx, plan.n_scored_per_window());
  std::vector<double> nll, base_nll, kld, prob_delta, tail_mass;
  int64_t n_same_top1 = 0;
  Timer timer;
  Status status = eval::run_windows(
      *m->model, *tokens, plan, m->bos_id,
      [&](int32_t w, std::span<const int32_t> window, const std::vector<float>& logits) -> Status {
        for (int32_t i = 0; i < plan.n_scored_per_window(); ++i) {
          const std::span<const float> row(logits.data() + static_cast<size_t>(i) * n_vocab, n_vocab);
          const int32_t target = window[plan.first_scored + i + 1];
          nll.push_back(eval::log_sum_exp(row) - row[target]);
          if (writer) TM_RETURN_IF_ERROR(writer->add(row, target));
          if (base) {
            const eval::ReferenceToken ref = base->record(static_cast<uint64_t>(w) * plan.n_scored_per_window() + i);
            const eval::TokenComparison c = eval::compare_to_reference(row, target, ref);
            kld.push_back(c.kl_divergence);
            prob_delta.push_back(c.target_prob_delta);
            tail_mass.push_back(c.reference_tail_mass);
            base_nll.push_back(-static_cast<double>(ref.target_log_prob));
            n_same_top1 += c.same_top1 ? 1 : 0;
          }
        }
        const eval::SampleSummary so_far = eval::summarize(nll);
        std::fprintf(stderr, "[%d/%d] PPL so far %.4f (%.1f s)\n", w + 1, plan.n_windows, std::exp(so_far.mean),
                     timer.seconds());
        return {};
      },
      kv_type);
  if (!status.ok()) return fail(status.to_string());
  if (writer) {
    Status s = writer->finish();
    if (!s.ok()) return fail(s.message());
  }
  const double seconds = timer.seconds();

  const eval::SampleSummary n = eval::summarize(nll);
  const double ppl = std::exp(n.mean);
  nlohmann::json result = {{"model", m->path},
                           {"text", o.text_file},
                           {"n_ctx", plan.n_ctx},
                           {"n_windows", plan.n_windows},
                           {"n_scored", n.n},
                           {"ppl", ppl},
                           {"ppl_stderr", ppl * n.standard_error},
                           {"mean_nll", n.mean},
                           {"seconds", seconds}};
  if (!o.json) {
    std::printf("model:      %s\ntext:       %s (%d windows of %d tokens, %lld scored)\n", m->path.c_str(),
                o.text_file.c_str(), plan.n_windows, plan.n_ctx, static_cast<long long>(n.n));
    std::printf("perplexity: %.4f ± %.4f\n", ppl, ppl * n.standard_error);
  }
  if (base) {
    const eval::SampleSummary k = eval::summarize(kld);
    const eval::SampleSummary dp = eval::summarize(prob_delta);
    const eval::SampleSummary tail = eval::summarize(tail_mass);
    const eval::SampleSummary bn = eval::summarize(base_nll);
    const double top1 = static_cast<double>(n_same_top1) / static_cast<double>(std::max<int64_t>(1, k.n));
    const double top1_se = std::sqrt(top1 * (1 - top1) / static_cast<double>(std::max<int64_t>(1, k.n)));
    // ln(PPL(Q) / PPL(base)) = mean(nll_q - nll_base): its error from the paired differences.
    std::vector<double> log_ratio(nll.size());
    for (size_t i = 0; i < nll.size(); ++i) log_ratio[i] = nll[i] - base_nll[i];
    const eval::SampleSummary lr = eval::summarize(log_ratio);
    result["base_ppl"] = std::exp(bn.mean);
    result["ln_ppl_ratio"] = lr.mean;
    result["ln_ppl_ratio_stderr"] = lr.standard_error;
    result["delta_ppl_percent"] = 100.0 * (std::exp(lr.mean) - 1.0);
    result["kld_mean"] = k.mean;
    result["kld_stderr"] = k.standard_error;
    result["kld_median"] = k.median;
    result["kld_p99"] = k.p99;
    result["kld_max"] = k.max;
    result["top1_agreement"] = top1;
    result["top1_agreement_stderr"] = top1_se;
    result["delta_p_mean"] = dp.mean;
    result["delta_p_stderr"] = dp.standard_error;
    result["base_tail_mass_mean"] = tail.mean;
    result["kl_top_k"] = base->header().top_k;
    if (!o.json) {
      std::printf("reference:  %s (top %u tokens per position)\n", o.kl_base.c_str(), base->header().top_k);
      std::printf("PPL(base):  %.4f   ln(PPL/PPL(base)) %.5f ± %.5f   ΔPPL %+.3f%%\n", std::exp(bn.mean), lr.mean,
                  lr.standard_error, 100.0 * (std::exp(lr.mean) - 1.0));
      std::printf("KLD:        mean %.6f ± %.6f   median %.6f   p99 %.6f   max %.6f\n", k.mean, k.standard_error,
                  k.median, k.p99, k.max);
      std::printf("top-1:      %.3f%% ± %.3f%% agree with the reference\n", 100 * top1, 100 * top1_se);
      std::printf("Δp:         mean %+.4f%% ± %.4f%% (probability of the correct token)\n", 100 * dp.mean,
                  100 * dp.standard_error);
      std::printf("reference tail mass outside its top %u: mean %.5f\n", base->header().top_k, tail.mean);
    }
  }
  if (o.json) {
    std::printf("%s\n", result.dump(2).c_str());
  } else {
    std::printf("time:       %.1f s (%.1f tokens/s through the model)\n", seconds,
                static_cast<double>(plan.n_windows) * plan.n_ctx / seconds);
    if (!o.save_logits.empty()) std::printf("saved reference logits to %s\n", o.save_logits.c_str());
  }
  return 0;
}

}  // namespace

void register_perplexity(CLI::App& app) {
  auto o = std::make_shared<PerplexityOptions>();
  CLI::App* cmd = app.add_subcommand("perplexity", "Perplexity on a text; KL divergence against saved reference logits");
  cmd->add_option("-m,--model", o->model, "GGUF file, or 'default'")->capture_default_str();
  cmd->add_option("-f,--file", o->text_file, "Text file to score")->required();
  cmd->add_option("-c,--ctx", o->n_ctx, "Window length in tokens (the second half of each is scored)")
      ->capture_default_str()->check(CLI::Range(16, 1 << 20));
  cmd->add_option("--chunks", o->max_windows, "Score at most this many windows (0: all)")->check(CLI::Range(0, 1 << 30));
  cmd->add_option("-t,--threads", o->n_threads, "Threads (default: all CPUs)")->check(CLI::Range(0, 1024));
  cmd->add_option("--save-logits", o->save_logits, "Save the top-k log-probabilities of every scored token here");
  add_kv_type_option(cmd, o->kv_type, "KV cache type: f16, or q8_0 (with --kl-base: what it costs)");
  cmd->add_option("--kl-base", o->kl_base, "Compare with logits saved by --save-logits (KL divergence, top-1)");
  cmd->add_option("--kl-top-k", o->top_k, "Tokens kept per position by --save-logits")->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_flag("--json", o->json, "Print the results as one JSON object");
  cmd->callback([o] { exit_code() = run_perplexity(*o); });
}

}  // namespace tokenmill::cli
