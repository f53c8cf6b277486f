// Importance matrices: per weight matrix, the sum over calibration tokens of each input
// channel's squared activation, and the number of tokens summed. sum_sq[j] / n_tokens is
// E[x_j^2], the factor by which an error in column j of the weights grows in the output,
// so quantizers weight column j's error by it (quantize_row_weighted in quant.h).
//
// File format: a GGUF file laid out like llama.cpp's imatrix GGUF, so either tool reads
// the other's:
//   general.type = "imatrix", imatrix.datasets = [str], imatrix.chunk_count = u32,
//   imatrix.chunk_size = u32
//   per weight W: tensor "W.in_sum2" F32 [n_cols, 1] and tensor "W.counts" F32 [1, 1]
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace tokenmill::quant {

struct ImportanceEntry {
  std::vector<double> sum_sq;  // [n_cols] sum over tokens of x_j^2
  int64_t n_tokens = 0;

  // E[x_j^2] as float: [n_cols]. n_tokens == 0 gives all ones (no information).
  std::vector<float> mean_sq() const;
};

struct ImportanceMatrix {
  std::map<std::string, ImportanceEntry> entries;  // by weight tensor name
  std::vector<std::string> datasets;               // calibration files it was made from
  uint32_t n_chunks = 0;
  uint32_t chunk_size = 0;

  const ImportanceEntry* find(const std::string& name) const;
};

Status write_importance_matrix(const ImportanceMatrix& matrix, const std::string& path);
// Fails with a Status naming the problem for a file that is not an importance matrix, or
// whose entries are incomplete or of the wrong shape.
Result<ImportanceMatrix> read_importance_matrix(const std::string& path);

}  // namespace tokenmill::quant
