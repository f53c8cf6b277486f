// The load-time kernel tuner: chooses, for this CPU, among kernel variants that give the
// same bits (quant/kernels/dispatch.h's KernelTuning) by timing them on the model's own
// matrices as decode reads them, and remembers the choice.
//
// Each weight type's decode width is settled on that type's own matrices (a CPU may
// stream one type faster on AVX2 kernels and another on AVX-512 ones). A choice is cached
// per CPU model, kernel set (TOKENMILL_ISA can cap it), thread count, build (the
// executable's build ID) and set of timed weight types in
// user_cache_dir()/kernel-tuning.tsv, one line per key; the next start with the same key
// reads it without timing. TOKENMILL_TUNE=off keeps the defaults and touches no file.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ops/backend.h"
#include "ops/weight_matrix.h"
#include "quant/kernels/dispatch.h"

namespace tokenmill::ops {

struct TuningTiming {
  std::string variant;  // e.g. "prefetch_weights=1 decode_variant=none"
  double seconds = 0;   // median time of one pass over the timed matrices, one token
};

struct TuningReport {
  quant::KernelTuning chosen;
  // "timed", "cache", "off" (TOKENMILL_TUNE=off or not asked), or "nothing to tune" (no
  // matrix of the model has kernels that differ between the variants).
  std::string source;
  std::string cache_key;
  std::string cache_path;
  std::vector<TuningTiming> timings;  // when timed: each of quant::kernel_tunings()
  // When timed, under the chosen prefetch setting: each timed type's pass on its own
  // kernels and, where it has them, on its decode variant, named by their instruction set
  // ("q4_K avx512", "q4_K avx2", "iq3_s avx512+gather").
  std::vector<TuningTiming> type_timings;
  int64_t timed_bytes = 0;            // weight bytes of one timed pass
  double seconds = 0;                 // the whole tuning, timing included

  // One line for logs and `tokenmill bench --tune`.
  std::string summary() const;
};

// Sets this process's kernel tuning (quant::set_kernel_tuning) and says how it was chosen.
// `matrices` are the model's weight matrices in the order a decode step reads them; the
// timing uses one-token products on `backend`, at most ~2 s. force_timing times even when
// a cached choice exists (and replaces it).
TuningReport tune_kernels(Backend& backend, std::span<const WeightMatrix* const> matrices, bool force_timing);

// Whether TOKENMILL_TUNE says "off" (then tune_kernels keeps the defaults).
bool tuning_disabled_by_environment();

}  // namespace tokenmill::ops
