#include "cli/load_options.h"

#include <cstdlib>
#include <string_view>

namespace tokenmill::cli {

model::LoadOptions load_options(int n_threads) {
  model::LoadOptions load;
  load.n_threads = n_threads;
  const char* repack = std::getenv("TOKENMILL_REPACK");
  if (repack != nullptr && std::string_view(repack) == "0") load.repack = false;
  return load;
}

}  // namespace tokenmill::cli
