// The --models-dir option the store commands (list, pull, import, show, cp, rm) share.
#pragma once

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "store/model_name.h"
#include "store/model_store.h"

namespace tokenmill::cli {

inline void add_models_dir_option(CLI::App* cmd, std::string& dir) {
  cmd->add_option("--models-dir", dir, "The model store (default: " + store::ModelStore::default_dir() + ")");
}

inline store::ModelStore open_store(const std::string& dir) {
  return store::ModelStore(dir.empty() ? store::ModelStore::default_dir() : dir);
}

// Prints "error: ..." and returns 1, for a subcommand's exit code.
inline int store_error(const Status& status) {
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
  return 1;
}

}  // namespace tokenmill::cli
