#include "convert/hf_gpt_oss.h"

#include <cstring>
#include <string>
#include <vector>

#include "quant/blocks.h"
#include "quant/type_traits.h"

namespace tokenmill::convert {

namespace {

constexpr int64_t kBlock = 32;  // MXFP4 values per block
constexpr const char* kExpertNames[] = {"gate_up_proj_blocks", "gate_up_proj_scales", "down_proj_blocks",
                                        "down_proj_scales",    "gate_up_proj",        "down_proj",
                                        "gate_up_proj_bias",   "down_proj_bias"};

std::string experts_prefix(int64_t layer) { return "model.layers." + std::to_string(layer) + ".mlp.experts."; }

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool is_float(Dtype d) { return d == Dtype::kF32 || d == Dtype::kF16 || d == Dtype::kBF16 || d == Dtype::kF64; }

Status check_tensor(const SafetensorsModel& model, const std::string& name, const std::vector<int64_t>& shape,
                    bool bytes) {
  const SafeTensor* t = model.find(name);
  if (t == nullptr) return not_found("tensor '" + name + "' of the gpt_oss architecture is missing");
  if (t->shape != shape) {
    return invalid_argument("tensor '" + name + "' has shape " + shape_text(t->shape) + ", but config.json makes it " +
                            shape_text(shape));
  }
  if (bytes ? t->dtype != Dtype::kU8 : !is_float(t->dtype)) {
    return invalid_argument("tensor '" + name + "' holds " + dtype_name(t->dtype) + " values; expected " +
                            (bytes ? "U8 (MXFP4 blocks and scales)" : "floating point"));
  }
  return {};
}

// One GGUF MXFP4 block from the Hub's: the same exponent, nibbles reordered.
void repack_block(uint8_t scale, const uint8_t* hub, quant::BlockMXFP4& out) {
  uint8_t codes[kBlock];
  for (int j = 0; j < kBlock / 2; ++j) {
    codes[2 * j] = hub[j] & 0x0F;
    codes[2 * j + 1] = hub[j] >> 4;
  }
  out.e = scale;
  for (int j = 0; j < kBlock / 2; ++j) out.qs[j] = static_cast<uint8_t>(codes[j] | (codes[j + kBlock / 2] << 4));
}

// Rows `first, first + step, ...` (n_rows of them per expert) of an MXFP4 stack of
// [n_expert, rows_per_expert] rows of n_cols values, as GGUF MXFP4 rows.
std::vector<uint8_t> mxfp4_rows(const SafeTensor& blocks, const SafeTensor& scales, int64_t n_expert,
                                int64_t rows_per_expert, int64_t first, int64_t step, int64_t n_rows, int64_t n_cols) {
  const int64_t nb = n_cols / kBlock;
  std::vector<uint8_t> out(static_cast<size_t>(n_expert * n_rows * nb) * sizeof(quant::BlockMXFP4));
  auto* dst = reinterpret_cast<quant::BlockMXFP4*>(out.data());
  for (int64_t e = 0; e < n_expert; ++e) {
    for (int64_t i = 0; i < n_rows; ++i) {
      const int64_t row = e * rows_per_expert + first + i * step;
      for (int64_t b = 0; b < nb; ++b) {
        repack_block(scales.data[static_cast<size_t>(row * nb + b)],
                     blocks.data.data() + static_cast<size_t>((row * nb + b) * (kBlock / 2)), *dst++);
      }
    }
  }
  return out;
}

// mxfp4_rows' values as F32 rows (what a float output type asks for).
std::vector<uint8_t> mxfp4_rows_as_f32(const std::vector<uint8_t>& packed, int64_t n_rows_total, int64_t n_cols) {
  const quant::TypeTraits& mxfp4 = quant::type_traits(gguf::TensorType::kMXFP4);
  const size_t row_bytes = static_cast<size_t>(n_cols / kBlock) * sizeof(quant::BlockMXFP4);
  std::vector<uint8_t> out(static_cast<size_t>(n_rows_total * n_cols) * sizeof(float));
  for (int64_t r = 0; r < n_rows_total; ++r) {
    mxfp4.dequantize_row(packed.data() + r * row_bytes, reinterpret_cast<float*>(out.data()) + r * n_cols, n_cols);
  }
  return out;
}

// Of a float stack [n_expert, n_in, n_out_all] (x @ W per expert), the outputs `first,
// first + step, ...` (n_out of them) as rows: [n_expert, n_out, n_in] F32.
Result<std::vector<uint8_t>> float_rows(const SafeTensor& t, int64_t n_expert, int64_t n_in, int64_t n_out_all,
                                        int64_t first, int64_t step, int64_t n_out) {
  auto values = to_f32(t);
  if (!values.ok()) return values.status();
  std::vector<float> rows(static_cast<size_t>(n_expert * n_out * n_in));
  for (int64_t e = 0; e < n_expert; ++e) {
    for (int64_t o = 0; o < n_out; ++o) {
      for (int64_t k = 0; k < n_in; ++k) {
        rows[static_cast<size_t>((e * n_out + o) * n_in + k)] =
            (*values)[static_cast<size_t>((e * n_in + k) * n_out_all + first + o * step)];
      }
    }
  }
  std::vector<uint8_t> out(rows.size() * sizeof(float));
  std::memcpy(out.data(), rows.data(), out.size());
  return out;
}

}  // namespace

bool is_gpt_oss_expert_tensor(const std::string& suffix) {
  for (const char* name : kExpertNames) {
    if (suffix == std::string("mlp.experts.") + name) return true;
  }
  return false;
}

Status check_gpt_oss_experts(const SafetensorsModel& model, const HfConfig& c) {
  const int64_t n = c.n_expert, h = c.hidden_size, ff = c.expert_intermediate_size;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = experts_prefix(l);
    if (model.find(p + "gate_up_proj_blocks") != nullptr) {
      if (h % kBlock != 0 || ff % kBlock != 0) {
        return invalid_argument("config.json: MXFP4 experts need hidden_size and intermediate_size divisible by 32");
      }
      TM_RETURN_IF_ERROR(check_tensor(model, p + "gate_up_proj_blocks", {n, 2 * ff, h / kBlock, kBlock / 2}, true));
      TM_RETURN_IF_ERROR(check_tensor(model, p + "gate_up_proj_scales", {n, 2 * ff, h / kBlock}, true));
      TM_RETURN_IF_ERROR(check_tensor(model, p + "down_proj_blocks", {n, h, ff / kBlock, kBlock / 2}, true));
      TM_RETURN_IF_ERROR(check_tensor(model, p + "down_proj_scales", {n, h, ff / kBlock}, true));
    } else {
      TM_RETURN_IF_ERROR(check_tensor(model, p + "gate_up_proj", {n, h, 2 * ff}, false));
      TM_RETURN_IF_ERROR(check_tensor(model, p + "down_proj", {n, ff, h}, false));
    }
    TM_RETURN_IF_ERROR(check_tensor(model, p + "gate_up_proj_bias", {n, 2 * ff}, false));
    TM_RETURN_IF_ERROR(check_tensor(model, p + "down_proj_bias", {n, h}, false));
  }
  return {};
}

Result<int64_t> add_gpt_oss_experts(const SafetensorsModel& model, const HfConfig& c, bool keep_mxfp4,
                                    gguf::Writer& writer, int64_t& n_parameters) {
  const int64_t n = c.n_expert, h = c.hidden_size, ff = c.expert_intermediate_size;
  int64_t added = 0;
  auto add = [&](const std::string& name, gguf::TensorType type, std::vector<int64_t> shape, auto produce) -> Status {
    int64_t count = 1;
    for (const int64_t d : shape) count *= d;
    n_parameters += count;
    ++added;
    return writer.add_tensor_produced(name, type, std::move(shape), std::move(produce));
  };
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = experts_prefix(l);
    const std::string blk = "blk." + std::to_string(l) + ".";
    const SafeTensor* gate_up_blocks = model.find(p + "gate_up_proj_blocks");
    const SafeTensor* gate_up_bias = model.find(p + "gate_up_proj_bias");
    const SafeTensor* down_bias = model.find(p + "down_proj_bias");
    // gate is the even outputs of gate_up, up the odd ones.
    for (const int64_t which : {0, 1}) {
      const std::string part = which == 0 ? "ffn_gate_exps" : "ffn_up_exps";
      if (gate_up_blocks != nullptr) {
        const SafeTensor* scales = model.find(p + "gate_up_proj_scales");
        const gguf::TensorType type = keep_mxfp4 ? gguf::TensorType::kMXFP4 : gguf::TensorType::kF32;
        TM_RETURN_IF_ERROR(add(blk + part + ".weight", type, {h, ff, n}, [=](std::vector<uint8_t>& out) -> Status {
          out = mxfp4_rows(*gate_up_blocks, *scales, n, 2 * ff, which, 2, ff, h);
          if (!keep_mxfp4) out = mxfp4_rows_as_f32(out, n * ff, h);
          return {};
        }));
      } else {
        const SafeTensor* gate_up = model.find(p + "gate_up_proj");
        TM_RETURN_IF_ERROR(add(blk + part + ".weight", gguf::TensorType::kF32, {h, ff, n}, [=](std::vector<uint8_t>& out) -> Status {
          auto rows = float_rows(*gate_up, n, h, 2 * ff, which, 2, ff);
          if (!rows.ok()) return rows.status();
          out = std::move(rows).value();
          return {};
        }));
      }
      TM_RETURN_IF_ERROR(add(blk + part + ".bias", gguf::TensorType::kF32, {ff, n}, [=](std::vector<uint8_t>& out) -> Status {
        // A bias stack [n, 2 ff] is a float stack with n_in = 1.
        auto rows = float_rows(*gate_up_bias, n, 1, 2 * ff, which, 2, ff);
        if (!rows.ok()) return rows.status();
        out = std::move(rows).value();
        return {};
      }));
    }
    if (gate_up_blocks != nullptr) {
      const SafeTensor* blocks = model.find(p + "down_proj_blocks");
      const SafeTensor* scales = model.find(p + "down_proj_scales");
      const gguf::TensorType type = keep_mxfp4 ? gguf::TensorType::kMXFP4 : gguf::TensorType::kF32;
      TM_RETURN_IF_ERROR(add(blk + "ffn_down_exps.weight", type, {ff, h, n}, [=](std::vector<uint8_t>& out) -> Status {
        out = mxfp4_rows(*blocks, *scales, n, h, 0, 1, h, ff);
        if (!keep_mxfp4) out = mxfp4_rows_as_f32(out, n * h, ff);
        return {};
      }));
    } else {
      const SafeTensor* down = model.find(p + "down_proj");
      TM_RETURN_IF_ERROR(add(blk + "ffn_down_exps.weight", gguf::TensorType::kF32, {ff, h, n}, [=](std::vector<uint8_t>& out) -> Status {
        auto rows = float_rows(*down, n, ff, h, 0, 1, h);
        if (!rows.ok()) return rows.status();
        out = std::move(rows).value();
        return {};
      }));
    }
    TM_RETURN_IF_ERROR(add(blk + "ffn_down_exps.bias", gguf::TensorType::kF32, {h, n}, [=](std::vector<uint8_t>& out) -> Status {
      auto rows = float_rows(*down_bias, n, 1, h, 0, 1, h);
      if (!rows.ok()) return rows.status();
      out = std::move(rows).value();
      return {};
    }));
  }
  return added;
}

}  // namespace tokenmill::convert
