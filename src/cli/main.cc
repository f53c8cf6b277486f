// tokenmill: one binary, one subcommand per file (cmd_*.cc).
#include <cstdio>

#include "cli/commands.h"

namespace tokenmill::cli {

int& exit_code() {
  static int code = 0;
  return code;
}

}  // namespace tokenmill::cli

int main(int argc, char** argv) {
  CLI::App app{"tokenmill: fast LLM inference on the machines you have"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tokenmill 0.1.0");
  tokenmill::cli::register_info(app);
  tokenmill::cli::register_run(app);
  tokenmill::cli::register_bench(app);
  tokenmill::cli::register_perplexity(app);
  tokenmill::cli::register_quantize(app);
  tokenmill::cli::register_convert(app);
  tokenmill::cli::register_imatrix(app);
  tokenmill::cli::register_serve(app);
  tokenmill::cli::register_batch(app);
  tokenmill::cli::register_distill(app);
  tokenmill::cli::register_bench_serve(app);
  tokenmill::cli::register_list(app);
  tokenmill::cli::register_pull(app);
  tokenmill::cli::register_import(app);
  tokenmill::cli::register_show(app);
  tokenmill::cli::register_cp(app);
  tokenmill::cli::register_rm(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return tokenmill::cli::exit_code();
}
