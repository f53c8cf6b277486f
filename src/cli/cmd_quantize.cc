// tokenmill quantize IN.gguf OUT.gguf TYPE: converts a model to a quantization mix
// (quant/quantize_mix.h), optionally weighting each weight's error by an importance
// matrix from `tokenmill imatrix`. One line per tensor on stderr; OUT appears only when
// the whole file is written (quant/quantize_model.h).
#include <cstdio>
#include <memory>
#include <string>

#include "base/thread_pool.h"
#include "base/timer.h"
#include "cli/commands.h"
#include "cli/eval_setup.h"
#include "eval/gptq_collector.h"
#include "eval/windows.h"
#include "gguf/gguf_file.h"
#include "quant/imatrix_file.h"
#include "quant/quantize_model.h"
#include "quant/type_traits.h"

namespace tokenmill::cli {

namespace {

struct QuantizeCliOptions {
  std::string input;
  std::string output;
  std::string type;
  std::string imatrix;
  std::string method = "rtn";
  std::string calib;       // --method gptq: calibration text
  std::string output_tensor_type;     // overrides the mix for the output projection
  std::string token_embedding_type;   // ... and for an untied token embedding
  int32_t calib_ctx = 512;
  int32_t calib_chunks = 0;
  double damp = quant::kGptqDefaultDamp;
  int n_threads = 0;
};

int fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

std::string known_types() {
  std::string s;
  for (const quant::MixInfo& m : quant::all_mixes()) s += (s.empty() ? "" : ", ") + std::string(m.name);
  return s;
}

std::string weight_type_names() {
  std::string s;
  for (const quant::TypeTraits& t : quant::all_type_traits()) {
    if (quant::is_weight_type(t.type)) s += (s.empty() ? "" : ", ") + std::string(gguf::tensor_type_name(t.type));
  }
  return s;
}

// The weight type named by `flag`'s value `name`; nullopt (nothing to override) for "".
Result<std::optional<gguf::TensorType>> named_weight_type(const std::string& flag, const std::string& name) {
  if (name.empty()) return std::optional<gguf::TensorType>();
  const std::optional<gguf::TensorType> type = gguf::tensor_type_from_name(name);
  if (!type || !quant::is_weight_type(*type)) {
    return invalid_argument(flag + ": unknown tensor type '" + name + "'; expected one of: " + weight_type_names());
  }
  return type;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? " x " : "") + std::to_string(shape[i]);
  return s;
}

// --method gptq: runs the source model over the calibration text in perplexity windows
// and collects every weight matrix's input Gram matrix X^T X (eval/gptq_collector.h).
Result<quant::GptqHessians> collect_gptq_statistics(const QuantizeCliOptions& o, int n_threads,
                                                    int64_t* n_tokens_out) {
  auto m = load_eval_model(o.input, n_threads, /*repack=*/false);
  if (!m.ok()) return Status(m.status().code(), "cannot load '" + o.input + "' for calibration: " + m.status().message());
  auto tokens = tokenize_text_file(*m, o.calib);
  if (!tokens.ok()) return Status(tokens.status().code(), "calibration text: " + tokens.status().message());
  auto plan = eval::plan_windows(static_cast<int64_t>(tokens->size()), o.calib_ctx, o.calib_chunks);
  if (!plan.ok()) {
    return invalid_argument("calibration text '" + o.calib + "' has " + std::to_string(tokens->size()) +
                            " tokens, fewer than one context of " + std::to_string(o.calib_ctx) +
                            " (use a longer text or a smaller --calib-ctx): " + plan.status().message());
  }
  eval::GptqCollector collector(*m->model, n_threads);
  m->model->set_matmul_observer(
      [&collector](const ops::WeightMatrix& w, const float* x, int64_t n) { collector.observe(w, x, n); });
  std::fprintf(stderr, "gptq: calibrating on %s, %zu tokens, %d windows of %d\n", o.calib.c_str(), tokens->size(),
               plan->n_windows, plan->n_ctx);
  Timer timer;
  Status status = eval::run_windows(
      *m->model, *tokens, *plan, m->bos_id,
      [&](int32_t w, std::span<const int32_t>, const std::vector<float>&) -> Status {
        std::fprintf(stderr, "gptq: [%d/%d] windows (%.1f s)\n", w + 1, plan->n_windows, timer.seconds());
        return {};
      });
  m->model->set_matmul_observer(nullptr);
  if (!status.ok()) return status;
  *n_tokens_out = static_cast<int64_t>(plan->n_windows) * plan->n_ctx;
  return collector.hessians();
}

int run_quantize(const QuantizeCliOptions& o) {
  auto mix = quant::find_mix(o.type);
  if (!mix) return fail("unknown type '" + o.type + "'; expected one of: " + known_types());
  if (o.method == "awq") {
    return fail("--method " + o.method + " is not implemented yet; use rtn (optionally with --imatrix) or gptq");
  }
  if (o.method != "rtn" && o.method != "gptq") return fail("unknown method '" + o.method + "'; expected rtn or gptq");
  const bool gptq = o.method == "gptq";
  if (gptq && o.calib.empty()) return fail("--method gptq needs calibration text: --calib TEXT");
  if (!gptq && !o.calib.empty()) return fail("--calib is only used with --method gptq");
  if (gptq && !o.imatrix.empty()) {
    return fail("--method gptq collects its own statistics from --calib; drop --imatrix");
  }
  if (o.input == o.output) return fail("the output path must differ from the input path");
  auto output_type = named_weight_type("--output-tensor-type", o.output_tensor_type);
  if (!output_type.ok()) return fail(output_type.status().message());
  auto embedding_type = named_weight_type("--token-embedding-type", o.token_embedding_type);
  if (!embedding_type.ok()) return fail(embedding_type.status().message());

  auto source = gguf::File::open(o.input);
  if (!source.ok()) return fail("cannot read '" + o.input + "': " + source.status().message());
  std::unique_ptr<quant::ImportanceMatrix> imatrix;
  if (!o.imatrix.empty()) {
    auto read = quant::read_importance_matrix(o.imatrix);
    if (!read.ok()) return fail(read.status().message());
    imatrix = std::make_unique<quant::ImportanceMatrix>(std::move(read).value());
  }

  const int n_threads = o.n_threads > 0 ? o.n_threads : default_thread_count();
  quant::GptqHessians hessians;
  int64_t calib_tokens = 0;
  if (gptq) {
    auto collected = collect_gptq_statistics(o, n_threads, &calib_tokens);
    if (!collected.ok()) return fail(collected.status().message());
    hessians = std::move(collected).value();
  }

  quant::QuantizeOptions options;
  options.mix = *mix;
  options.type_overrides = {*output_type, *embedding_type};
  if (gptq) {
    options.gptq = &hessians;
    options.gptq_damp = o.damp;
    options.gptq_calib_path = o.calib;
    options.gptq_calib_tokens = calib_tokens;
  }
  options.imatrix = imatrix.get();
  options.imatrix_path = o.imatrix;
  options.n_threads = n_threads;
  options.on_requantize = [&](int64_t n) {
    std::fprintf(stderr,
                 "warning: '%s' holds %lld quantized weight matrices; they are dequantized first, and "
                 "requantizing loses quality (tensors already in the target type are copied unchanged)\n",
                 o.input.c_str(), static_cast<long long>(n));
  };
  options.on_tensor = [](const quant::TensorProgress& p) {
    std::string note;
    if (p.wanted_type != p.new_type) {
      note = " (row length " + std::to_string(p.source->shape[0]) + " does not fit " +
             std::string(gguf::tensor_type_name(p.wanted_type)) + ")";
    }
    if (p.used_importance) note += " [imatrix]";
    if (p.used_gptq) note += " [gptq]";
    std::fprintf(stderr, "[%4lld/%4lld] %-36s %-16s %5s -> %-5s %9.2f MiB%s\n", static_cast<long long>(p.index + 1),
                 static_cast<long long>(p.n_tensors), p.source->name.c_str(), shape_string(p.source->shape).c_str(),
                 std::string(gguf::tensor_type_name(p.source->type)).c_str(),
                 std::string(gguf::tensor_type_name(p.new_type)).c_str(), p.new_bytes / 1048576.0, note.c_str());
  };
  std::fprintf(stderr, "quantize: %s -> %s as %s with %d threads%s\n", o.input.c_str(), o.output.c_str(),
               std::string(mix->name).c_str(), options.n_threads,
               gptq ? ", GPTQ" : imatrix ? ", importance-weighted" : "");
  auto summary = quant::quantize_model(*source, o.output, options);
  if (!summary.ok()) return fail(summary.status().message());
  const double bpw = 8.0 * static_cast<double>(summary->output_tensor_bytes) / static_cast<double>(summary->n_parameters);
  std::fprintf(stderr,
               "quantize: %.2f MiB -> %.2f MiB of tensors (%.2f bits per weight), %lld fallbacks, %lld tensors "
               "importance-weighted, %lld with GPTQ, %.1f s\n",
               summary->source_tensor_bytes / 1048576.0, summary->output_tensor_bytes / 1048576.0, bpw,
               static_cast<long long>(summary->n_fallbacks), static_cast<long long>(summary->n_with_importance),
               static_cast<long long>(summary->n_with_gptq), summary->seconds);
  return 0;
}

}  // namespace

void register_quantize(CLI::App& app) {
  auto o = std::make_shared<QuantizeCliOptions>();
  CLI::App* cmd = app.add_subcommand("quantize", "Convert a GGUF model to another type (Q4_K_M, Q8_0, F16 ...)");
  cmd->add_option("input", o->input, "Source GGUF (F32/F16/BF16, or quantized: dequantized first)")->required();
  cmd->add_option("output", o->output, "GGUF file to write")->required();
  cmd->add_option("type", o->type, "One of: " + known_types())->required();
  cmd->add_option("--output-tensor-type", o->output_tensor_type,
                  "Type of the output projection (token_embd.weight when the embeddings are tied), "
                  "instead of the mix's choice");
  cmd->add_option("--token-embedding-type", o->token_embedding_type,
                  "Type of an untied token embedding, instead of the mix's choice");
  cmd->add_option("--imatrix", o->imatrix, "Importance matrix from `tokenmill imatrix` to weight the errors");
  cmd->add_option("--method", o->method,
                  "rtn (round to nearest with scale search) or gptq (second-order error compensation; needs --calib)")
      ->capture_default_str();
  cmd->add_option("--calib", o->calib, "Calibration text for --method gptq");
  cmd->add_option("--calib-ctx", o->calib_ctx, "Calibration window length in tokens")
      ->capture_default_str()
      ->check(CLI::Range(16, 1 << 20));
  cmd->add_option("--calib-chunks", o->calib_chunks, "Use at most this many calibration windows (0: all)")
      ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--damp", o->damp, "GPTQ damping: this fraction of mean(diag H) is added to diag H")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_option("-t,--threads", o->n_threads, "Threads (default: all CPUs)")->check(CLI::Range(0, 1024));
  cmd->callback([o] { exit_code() = run_quantize(*o); });
}

}  // namespace tokenmill::cli
