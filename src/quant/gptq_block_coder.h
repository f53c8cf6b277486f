// One format's block in the steps GPTQ (gptq.h) takes through it: fit the scales on the
// block's values as they stand when the block starts, then decide the block group by
// group, each group from its values at that moment (earlier groups' errors have moved
// them), then pack. A group is one column for formats that round each value on its own
// (the legacy and K-quants, IQ4_NL, IQ4_XS) and 8 columns for the lattice i-quants, whose
// grid points and sign bytes cover 8 weights together.
//
// Error weights inside a coder are importance * sqrt(sigma2 + x^2), as for every
// weighted quantizer (quant.h's quantize_row_weighted).
//
// Thread-safety: a coder holds one block's state; use one per thread.
#pragma once

#include <memory>

#include "gguf/tensor_type.h"

namespace tokenmill::quant {

class GptqBlockCoder {
 public:
  virtual ~GptqBlockCoder() = default;
  virtual int block_size() const = 0;  // columns per block: 32 or 256
  virtual int group_size() const = 0;  // columns decided together: 1 or 8
  // Scales for the block x[0, block_size) with importance[0, block_size).
  virtual void fit(const float* x, const float* importance, float sigma2) = 0;
  // Decides group g from x[0, group_size) (its current values) and writes the values the
  // chosen codes stand for to q[0, group_size).
  virtual void decide_group(int g, const float* x, const float* importance, float sigma2, float* q) = 0;
  // Writes the decided block (block_size columns of the type) to dst.
  virtual void pack(void* dst) = 0;
};

// The coders of the non-affine formats; null for other types.
std::unique_ptr<GptqBlockCoder> make_iq4_gptq_coder(gguf::TensorType type);     // quants_iq4.cc
std::unique_ptr<GptqBlockCoder> make_lattice_gptq_coder(gguf::TensorType type);  // quants_iq_lattice_quantize.cc

}  // namespace tokenmill::quant
