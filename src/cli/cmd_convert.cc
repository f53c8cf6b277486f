// tokenmill convert HF_DIR OUT.gguf [--outtype TYPE]: a Hugging Face model directory to
// GGUF (convert/convert_model.h). A progress line on stderr (redrawn on a terminal);
// OUT appears only when the whole file is written.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "base/thread_pool.h"
#include "base/timer.h"
#include "cli/commands.h"
#include "convert/convert_model.h"
#include "convert/hf_architectures.h"

namespace tokenmill::cli {

namespace {

struct ConvertCliOptions {
  std::string input;
  std::string output;
  std::string outtype = "F16";
  int n_threads = 0;
  std::string name;
};

int run_convert(const ConvertCliOptions& o) {
  auto mix = quant::find_mix(o.outtype);
  if (!mix) {
    std::string known;
    for (const quant::MixInfo& m : quant::all_mixes()) known += (known.empty() ? "" : ", ") + std::string(m.name);
    std::fprintf(stderr, "error: unknown --outtype '%s'; expected one of: %s\n", o.outtype.c_str(), known.c_str());
    return 1;
  }
  convert::ConvertOptions options;
  options.outtype = *mix;
  options.n_threads = o.n_threads > 0 ? o.n_threads : default_thread_count();
  options.name = o.name;
  const bool tty = isatty(STDERR_FILENO) != 0;
  Timer timer;
  options.on_progress = [&](const char* phase, int64_t done, int64_t total) {
    // On a terminal one redrawn line; in a log, a line per tenth.
    if (!tty && done != total && (done * 10 / total) == ((done - 1) * 10 / total)) return;
    const int width = 30;
    const int filled = static_cast<int>(width * done / total);
    std::fprintf(stderr, tty ? "\r%-8s [%s%s] %lld/%lld tensors %.1f s\033[K" : "%-8s [%s%s] %lld/%lld tensors %.1f s\n",
                 phase, std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(width - filled), '.').c_str(), static_cast<long long>(done),
                 static_cast<long long>(total), timer.seconds());
    if (tty && done == total) std::fputc('\n', stderr);
  };
  auto summary = convert::convert_hf_model(o.input, o.output, options);
  if (!summary.ok()) {
    std::fprintf(stderr, "error: %s\n", summary.status().message().c_str());
    return 1;
  }
  std::fprintf(stderr, "convert: %s (%s -> GGUF %s, tokenizer %s, %lld tokens) -> %s as %s: %lld tensors, %.1fM parameters, %.1f s\n",
               o.input.c_str(), summary->model_type.c_str(), summary->gguf_arch.c_str(), summary->tokenizer_pre.c_str(),
               static_cast<long long>(summary->n_tokens), o.output.c_str(), std::string(mix->name).c_str(),
               static_cast<long long>(summary->n_tensors), summary->n_parameters / 1e6, timer.seconds());
  return 0;
}

}  // namespace

void register_convert(CLI::App& app) {
  auto o = std::make_shared<ConvertCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "convert", "Convert a Hugging Face model directory (safetensors) to GGUF (model types: " +
                     convert::supported_model_types() + ")");
  cmd->add_option("input", o->input, "Directory with config.json, *.safetensors and tokenizer.json")->required();
  cmd->add_option("output", o->output, "GGUF file to write")->required();
  cmd->add_option("--outtype", o->outtype, "F32, F16, BF16, Q8_0, or any `tokenmill quantize` type")->capture_default_str();
  cmd->add_option("--name", o->name, "general.name of the file (default: the directory's name)");
  cmd->add_option("-t,--threads", o->n_threads, "Threads for quantizing (default: all CPUs)")->check(CLI::Range(0, 1024));
  cmd->callback([o] { exit_code() = run_convert(*o); });
}

}  // namespace tokenmill::cli
