// tokenmill bench --spec ngram: speculative decoding against plain decoding on the serving
// engine, same process, same prompts: a copy-heavy prompt (a text to repeat) and a free
// one, each generated greedily with and without drafts, alternating, -r times. Prints the
// decode speed of both, the speed-up, the acceptance rate and the mean accepted length.
#pragma once

#include <string>

#include "engine/speculation.h"

namespace tokenmill::cli {

struct SpecBenchOptions {
  std::string model = "default";
  int n_threads = 0;
  int repetitions = 3;
  int32_t n_gen = 128;
  bool json = false;
  engine::SpeculativeConfig speculative;
  std::string draft_model;  // --draft-model
};

// Returns the process exit code.
int run_spec_bench(const SpecBenchOptions& o);

}  // namespace tokenmill::cli
