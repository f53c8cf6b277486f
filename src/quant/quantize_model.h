// The quantize driver: reads every tensor of a GGUF model, converts it to the type its
// mix chooses (quantize_mix.h), optionally weighting the error by an importance matrix,
// and writes a new GGUF with the same metadata (general.file_type updated, and
// tokenmill.quantize.* recording how the file was made).
//
// The output is written through gguf::Writer (temporary file, then rename), each tensor
// converted as its turn to be written comes: on any error nothing is left at the output
// path, and neither model is ever whole in memory.
//
// Thread-safety: quantize_model() may run concurrently with itself on different files.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "quant/gptq.h"
#include "quant/imatrix_file.h"
#include "quant/quantize_mix.h"

namespace tokenmill::quant {

struct TensorProgress {
  int64_t index = 0;     // 0-based
  int64_t n_tensors = 0;
  const gguf::TensorInfo* source = nullptr;
  gguf::TensorType new_type = gguf::TensorType::kF32;
  gguf::TensorType wanted_type = gguf::TensorType::kF32;  // differs when the row length forced a fallback
  bool used_importance = false;
  bool used_gptq = false;
  uint64_t new_bytes = 0;
};

struct QuantizeOptions {
  MixInfo mix;
  TypeOverrides type_overrides;  // types named for the vocabulary tensors
  const ImportanceMatrix* imatrix = nullptr;  // optional
  std::string imatrix_path;                   // recorded in the output's metadata
  int n_threads = 1;
  // Recorded as tokenmill.quantize.source; empty: the source file's name.
  std::string source_name;
  // GPTQ (gptq.h): calibration statistics per weight matrix. Matrices with an entry whose
  // type supports_gptq() are quantized with error compensation, the others as without
  // it (importance-weighted by their entry's diagonal when they have one).
  const GptqHessians* gptq = nullptr;
  double gptq_damp = kGptqDefaultDamp;
  std::string gptq_calib_path;   // recorded in the output's metadata
  int64_t gptq_calib_tokens = 0;
  // Called after each tensor, on the calling thread.
  std::function<void(const TensorProgress&)> on_tensor;
  // Called once, before any work, when the source holds quantized weight matrices (they
  // are dequantized first, and requantizing loses quality).
  std::function<void(int64_t n_quantized_tensors)> on_requantize;
};

struct QuantizeSummary {
  uint64_t source_tensor_bytes = 0;
  uint64_t output_tensor_bytes = 0;
  int64_t n_parameters = 0;        // elements of every tensor
  int64_t n_fallbacks = 0;         // tensors whose row length forced another type
  int64_t n_with_importance = 0;   // tensors quantized with imatrix weights
  int64_t n_with_gptq = 0;         // tensors quantized with GPTQ
  double seconds = 0;
};

// The facts the mix rules need, from the file's "<architecture>.*" metadata.
Result<ModelFacts> read_model_facts(const gguf::File& file);

// Checks that an importance matrix fits the model: every entry names a weight matrix of
// the file with as many columns as the entry has values. The error names the first
// mismatch (an imatrix made from another model fails here).
Status check_importance_matrix(const ImportanceMatrix& imatrix, const gguf::File& file);

Result<QuantizeSummary> quantize_model(const gguf::File& source, const std::string& output_path,
                                       const QuantizeOptions& options);

}  // namespace tokenmill::quant
