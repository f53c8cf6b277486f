// The model::LoadOptions every subcommand starts from: n_threads, and repacking unless
// the environment says TOKENMILL_REPACK=0 (the file's layout everywhere, for comparisons;
// the results are the same bits).
#pragma once

#include "model/model.h"

namespace tokenmill::cli {

model::LoadOptions load_options(int n_threads);

}  // namespace tokenmill::cli
