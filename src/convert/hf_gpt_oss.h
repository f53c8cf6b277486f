// gpt-oss's experts, from the two layouts its checkpoints come in, to llama.cpp's GGUF
// tensors: per layer ffn_{gate,up,down}_exps.weight ([n_embd, n_ff, n_expert] and
// [n_ff, n_embd, n_expert] in ggml order) and their .bias tensors ([n_ff, n_expert],
// [n_embd, n_expert]).
//
// - As published (openai/gpt-oss-*): mlp.experts.{gate_up,down}_proj_{blocks,scales}, MXFP4
//   by output row: blocks [n_expert, rows, n_blocks, 16] bytes whose low nibble is element
//   2j and high nibble element 2j + 1 of each 32-value block, scales [n_expert, rows,
//   n_blocks] E8M0 exponents. Kept as MXFP4 (GGUF orders each block's nibbles as Q4_0
//   does: element j low, j + 16 high), bit for bit the same values, unless the output
//   type is a float one (F32/F16/BF16), which gets the exact values as floats.
// - Float (bf16 re-exports, transformers' save_pretrained): mlp.experts.gate_up_proj
//   [n_expert, n_embd, 2 n_ff] and down_proj [n_expert, n_ff, n_embd], written as F32 for
//   the chosen type to quantize.
//
// Either way gate_up interleaves its outputs: gate is column (row) 2i, up 2i + 1, and so
// do its biases (mlp.experts.{gate_up,down}_proj_bias).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "convert/hf_config.h"
#include "convert/safetensors.h"
#include "gguf/gguf_writer.h"

namespace tokenmill::convert {

// Whether a name after "model.layers.N." is one of the expert tensors this file converts.
bool is_gpt_oss_expert_tensor(const std::string& layer_suffix);

// Checks every layer's expert tensors (present in one layout, shapes, dtypes) before
// anything is written.
Status check_gpt_oss_experts(const SafetensorsModel& model, const HfConfig& config);

// Adds the six expert tensors of every layer (MXFP4 sources as MXFP4 where keep_mxfp4,
// else as F32); returns how many it added and counts their parameters into n_parameters.
// REQUIRES: check_gpt_oss_experts passed; model outlives the writer's write().
Result<int64_t> add_gpt_oss_experts(const SafetensorsModel& model, const HfConfig& config, bool keep_mxfp4,
                                    gguf::Writer& writer, int64_t& n_parameters);

}  // namespace tokenmill::convert
