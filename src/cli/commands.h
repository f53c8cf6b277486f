// Each subcommand lives in its own file and registers itself on the CLI11 app; its
// callback sets the process exit code.
#pragma once

#include <CLI/CLI.hpp>

namespace tokenmill::cli {

// The exit code the chosen subcommand asked for (0 unless it failed).
int& exit_code();

void register_info(CLI::App& app);
void register_run(CLI::App& app);
void register_bench(CLI::App& app);
void register_perplexity(CLI::App& app);
void register_quantize(CLI::App& app);
void register_imatrix(CLI::App& app);
// A Hugging Face model directory to GGUF (convert/).
void register_convert(CLI::App& app);
void register_serve(CLI::App& app);
// A file of requests in the Batches API format, offline (server/offline_batch.h).
void register_batch(CLI::App& app);
// Training data from a teacher model's answers (dataset/).
void register_distill(CLI::App& app);
void register_bench_serve(CLI::App& app);
// The model store (store/model_store.h).
void register_list(CLI::App& app);
void register_pull(CLI::App& app);
void register_import(CLI::App& app);
void register_show(CLI::App& app);
void register_cp(CLI::App& app);
void register_rm(CLI::App& app);

}  // namespace tokenmill::cli
