// tokenmill convert on broken inputs (one clear line, nothing at OUT) and to quantized
// types, starting from a copy of the Qwen 3 fixture (tests/fixtures/hf_models/qwen3), and
// gpt-oss's MXFP4 experts from a copy of its fixture.
#include "convert/convert_model.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <cstring>
#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "convert/safetensors.h"
#include "convert/safetensors_bytes.h"
#include "gguf/gguf_file.h"
#include "model/model.h"
#include "quant/type_traits.h"

namespace tokenmill::convert {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TensorBytes;

class ConvertModel : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("tm_convert_" + std::to_string(getpid()));
    fs::remove_all(root_);
    dir_ = root_ / fixture();
    out_dir_ = root_ / "out";
    fs::create_directories(out_dir_);
    fs::copy(std::string(TOKENMILL_FIXTURES_DIR) + "/hf_models/" + fixture(), dir_);
  }
  void TearDown() override { fs::remove_all(root_); }
  virtual std::string fixture() const { return "qwen3"; }

  json config() {
    std::ifstream in(dir_ / "config.json");
    return json::parse(in);
  }
  void set_config(const json& c) { testing::write_file((dir_ / "config.json").string(), c.dump(2)); }

  // The fixture's tensors, to be edited and written back.
  std::vector<TensorBytes> tensors() {
    auto file = SafetensorsFile::open((dir_ / "model.safetensors").string());
    EXPECT_TRUE(file.ok()) << file.status().message();
    std::vector<TensorBytes> out;
    for (const SafeTensor& t : file->tensors()) {
      out.push_back({t.name, dtype_name(t.dtype), t.shape, std::vector<uint8_t>(t.data.begin(), t.data.end())});
    }
    return out;
  }
  void set_tensors(const std::vector<TensorBytes>& t) {
    testing::write_file((dir_ / "model.safetensors").string(), testing::safetensors_bytes(t));
  }
  // Rewrites the file with the header edited by `edit` (the data stays as it was).
  void edit_header(const std::function<void(json&)>& edit) {
    const std::vector<TensorBytes> t = tensors();
    json header = json::parse(testing::safetensors_header(t));
    edit(header);
    std::vector<uint8_t> data;
    for (const TensorBytes& x : t) data.insert(data.end(), x.data.begin(), x.data.end());
    testing::write_file((dir_ / "model.safetensors").string(), testing::safetensors_bytes(header.dump(), data));
  }

  Result<ConvertSummary> convert(const char* type = "F32") {
    ConvertOptions options;
    options.outtype = *quant::find_mix(type);
    return convert_hf_model(dir_.string(), out_path(), options);
  }
  std::string out_path() const { return (out_dir_ / "model.gguf").string(); }

  // The conversion fails with one line holding `message`, and the output directory is empty.
  void expect_refused(const std::string& message) {
    auto result = convert();
    ASSERT_FALSE(result.ok()) << "expected: " << message;
    EXPECT_NE(result.status().message().find(message), std::string::npos) << result.status().message();
    EXPECT_EQ(result.status().message().find('\n'), std::string::npos) << result.status().message();
    EXPECT_TRUE(fs::is_empty(out_dir_)) << "something was written for: " << message;
  }

  fs::path root_, dir_, out_dir_;
};

TEST_F(ConvertModel, UnknownModelTypeIsRefused) {
  json c = config();
  c["model_type"] = "gpt_neox";
  set_config(c);
  expect_refused("model_type 'gpt_neox' is not supported (supported: llama, mistral, qwen2, qwen3, qwen3_moe");
}

TEST_F(ConvertModel, ConfigFieldsOutOfRangeAreRefused) {
  const std::vector<std::pair<std::string, json>> cases = {
      {"num_hidden_layers", 0}, {"hidden_size", -128}, {"vocab_size", int64_t{1} << 40}, {"num_key_value_heads", 3},
      {"head_dim", 63}, {"rms_norm_eps", "tiny"}};
  for (const auto& [key, value] : cases) {
    SetUp();
    json c = config();
    c[key] = value;
    set_config(c);
    auto result = convert();
    ASSERT_FALSE(result.ok()) << key;
    EXPECT_NE(result.status().message().find(key), std::string::npos) << result.status().message();
    EXPECT_TRUE(fs::is_empty(out_dir_)) << key;
  }
  SetUp();
  json c = config();
  c["hidden_act"] = "gelu";
  set_config(c);
  expect_refused("hidden_act 'gelu' is not supported");
}

// Qwen slides only from max_window_layers on, which GGUF cannot say: refused rather than
// converted into a model that attends differently.
TEST_F(ConvertModel, QwenSlidingWindowIsRefused) {
  json c = config();
  c["use_sliding_window"] = true;
  c["sliding_window"] = 4096;
  set_config(c);
  expect_refused("a sliding window (use_sliding_window) is not supported for qwen3");
}

TEST_F(ConvertModel, AMissingTensorIsNamed) {
  std::vector<TensorBytes> t = tensors();
  std::erase_if(t, [](const TensorBytes& x) { return x.name == "model.layers.1.mlp.up_proj.weight"; });
  set_tensors(t);
  expect_refused("tensor 'blk.1.ffn_up.weight' of the qwen3 architecture is missing");
}

TEST_F(ConvertModel, AnUnknownTensorIsNamed) {
  std::vector<TensorBytes> t = tensors();
  t.push_back({"model.layers.0.mlp.extra.weight", "F32", {1}, testing::f32_bytes({1})});
  set_tensors(t);
  expect_refused("tensor 'model.layers.0.mlp.extra.weight' has no place in a qwen3 model");
}

TEST_F(ConvertModel, AMisshapenTensorIsNamed) {
  std::vector<TensorBytes> t = tensors();
  for (TensorBytes& x : t) {
    if (x.name == "model.layers.2.self_attn.k_norm.weight") {
      x.shape = {32};
      x.data.resize(64);
    }
  }
  set_tensors(t);
  expect_refused("tensor 'model.layers.2.self_attn.k_norm.weight' has shape [32], but config.json makes it [64]");
}

TEST_F(ConvertModel, BrokenSafetensorsHeadersAreRefused) {
  edit_header([](json& h) { h["model.norm.weight"]["data_offsets"][1] = 1ull << 40; });
  expect_refused("'model.norm.weight' data_offsets");
  SetUp();
  edit_header([](json& h) {
    // The norm's range moved onto the start of the embedding's.
    const auto embd = h["model.embed_tokens.weight"]["data_offsets"];
    const uint64_t size = h["model.norm.weight"]["data_offsets"][1].get<uint64_t>() -
                          h["model.norm.weight"]["data_offsets"][0].get<uint64_t>();
    h["model.norm.weight"]["data_offsets"] = {embd[0].get<uint64_t>(), embd[0].get<uint64_t>() + size};
  });
  expect_refused("overlap");
  SetUp();
  edit_header([](json& h) { h["model.norm.weight"]["dtype"] = "F32"; });  // BF16 bytes read as F32
  expect_refused("'model.norm.weight' holds 256 bytes, but F32 of 128 elements needs 512");
}

TEST_F(ConvertModel, QuantizedTypesLoadAndStayCloseToF32) {
  auto f32 = convert("F32");
  ASSERT_TRUE(f32.ok()) << f32.status().message();
  auto reference = model::load_model(out_path(), model::LoadOptions{});
  ASSERT_TRUE(reference.ok());
  for (const char* type : {"Q8_0", "Q4_K_M"}) {
    auto result = convert(type);
    ASSERT_TRUE(result.ok()) << type << ": " << result.status().message();
    int n_files = 0;
    for (const auto& entry : fs::directory_iterator(out_dir_)) n_files += entry.is_regular_file();
    EXPECT_EQ(n_files, 1) << type << ": the F32 file the quantizer read is gone";
    auto model = model::load_model(out_path(), model::LoadOptions{});
    ASSERT_TRUE(model.ok()) << type << ": " << model.status().message();
    // First-position logits of one token, against the F32 file's.
    auto logits = [](model::Model& m) {
      ops::KvStorage kv(m.kv_shape(1));
      model::Batch batch;
      batch.add_sequence({638, 342, 198}, 0, {0}, true);
      std::vector<float> out;
      EXPECT_TRUE(m.forward(batch, kv, out).ok());
      return out;
    };
    const std::vector<float> want = logits(**reference), got = logits(**model);
    double scale = 0, error = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      scale = std::max(scale, static_cast<double>(std::abs(want[i])));
      error = std::max(error, static_cast<double>(std::abs(got[i] - want[i])));
    }
    std::printf("%s: max |logit - F32 logit| / max |logit| = %.3f\n", type, error / scale);
    EXPECT_LT(error / scale, std::string(type) == "Q8_0" ? 0.05 : 0.5) << type;
  }
}

// gpt-oss's experts as the Hub stores them (MXFP4 blocks and scales).
class ConvertGptOss : public ConvertModel {
 protected:
  std::string fixture() const override { return "gpt_oss"; }
};

// A quantized file keeps the experts in MXFP4 with the published values (whatever its
// mix gives the other matrices); a float file holds the same values as floats.
TEST_F(ConvertGptOss, QuantizedFilesKeepTheMxfp4ExpertsFloatFilesHoldTheirValues) {
  ASSERT_TRUE(convert("F32").ok());
  const std::string f32_path = (out_dir_ / "f32.gguf").string();
  fs::rename(out_path(), f32_path);
  auto converted = convert("Q8_0");
  ASSERT_TRUE(converted.ok()) << converted.status().message();
  auto f32 = gguf::File::open(f32_path);
  auto q8 = gguf::File::open(out_path());
  ASSERT_TRUE(f32.ok() && q8.ok());
  const quant::TypeTraits& mxfp4 = quant::type_traits(gguf::TensorType::kMXFP4);
  for (const char* name : {"blk.0.ffn_gate_exps.weight", "blk.1.ffn_up_exps.weight", "blk.3.ffn_down_exps.weight"}) {
    const gguf::TensorInfo* packed = q8->find_tensor(name);
    const gguf::TensorInfo* floats = f32->find_tensor(name);
    ASSERT_TRUE(packed && floats) << name;
    EXPECT_EQ(packed->type, gguf::TensorType::kMXFP4) << name;
    EXPECT_EQ(floats->type, gguf::TensorType::kF32) << name;
    ASSERT_EQ(packed->shape, floats->shape) << name;
    const int64_t n_cols = packed->shape[0];
    const int64_t n_rows = packed->n_elements() / n_cols;
    const size_t row_bytes = static_cast<size_t>(n_cols / 32) * 17;
    const auto* expected = reinterpret_cast<const float*>(f32->tensor_data(*floats).data());
    std::vector<float> row(static_cast<size_t>(n_cols));
    for (int64_t r = 0; r < n_rows; ++r) {
      mxfp4.dequantize_row(q8->tensor_data(*packed).data() + r * row_bytes, row.data(), n_cols);
      ASSERT_EQ(std::memcmp(row.data(), expected + r * n_cols, row.size() * sizeof(float)), 0) << name << " row " << r;
    }
  }
  EXPECT_EQ(q8->find_tensor("blk.0.attn_q.weight")->type, gguf::TensorType::kQ8_0);
  EXPECT_EQ(q8->find_tensor("blk.0.attn_sinks.weight")->type, gguf::TensorType::kF32);
  EXPECT_EQ(q8->find_tensor("blk.0.ffn_gate_exps.bias")->type, gguf::TensorType::kF32);
  // The quantized file runs.
  auto model = model::load_model(out_path(), model::LoadOptions{});
  ASSERT_TRUE(model.ok()) << model.status().message();
}

TEST_F(ConvertGptOss, Mxfp4BlocksOfTheWrongShapeAreRefused) {
  std::vector<TensorBytes> t = tensors();
  for (TensorBytes& x : t) {
    if (x.name != "model.layers.2.mlp.experts.down_proj_blocks") continue;
    x.shape[2] -= 1;  // one 32-value block short per row
    x.data.resize(x.data.size() / (x.shape[2] + 1) * x.shape[2]);
  }
  set_tensors(t);
  expect_refused("tensor 'model.layers.2.mlp.experts.down_proj_blocks' has shape [8, 128, 1, 16], but config.json "
                 "makes it [8, 128, 2, 16]");
}

TEST_F(ConvertGptOss, MissingScalesAreNamed) {
  std::vector<TensorBytes> t = tensors();
  std::erase_if(t, [](const TensorBytes& x) { return x.name == "model.layers.1.mlp.experts.gate_up_proj_scales"; });
  set_tensors(t);
  expect_refused("tensor 'model.layers.1.mlp.experts.gate_up_proj_scales' of the gpt_oss architecture is missing");
}

TEST_F(ConvertGptOss, AnotherSwigluLimitIsRefused) {
  json c = config();
  c["swiglu_limit"] = 5.0;
  set_config(c);
  expect_refused("swiglu_limit other than 7 is not supported");
}

}  // namespace
}  // namespace tokenmill::convert
