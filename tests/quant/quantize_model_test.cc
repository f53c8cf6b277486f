// The quantize driver on small GGUF files built here: types per tensor, metadata carried
// over and recorded, importance matrices checked against the model, and nothing left at
// the output path when something fails.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "quant/imatrix_file.h"
#include "quant/quant.h"
#include "quant/quantize_model.h"
#include "quant_test_util.h"

namespace tokenmill::quant {
namespace {

namespace fs = std::filesystem;
using gguf::TensorType;

class QuantizeModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tm_quantize_test_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A two-layer "llama" with 512-wide rows (K-quants fit) and 1-D norms, all F32.
  std::string write_source(TensorType matrix_type = TensorType::kF32) {
    gguf::Writer w;
    w.set_string("general.architecture", "llama");
    w.set_string("general.name", "tiny");
    w.set_u32("llama.block_count", 2);
    w.set_u32("llama.attention.head_count", 4);
    w.set_u32("llama.attention.head_count_kv", 4);
    w.set_u32("general.file_type", 0);
    auto add = [&](const std::string& name, std::vector<int64_t> shape, TensorType type, uint32_t seed) {
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      const std::vector<float> values = testing::random_normal(static_cast<size_t>(n), seed, 0.05f);
      std::vector<uint8_t> bytes(row_size(type, shape[0]) * static_cast<size_t>(n / shape[0]));
      for (int64_t r = 0; r < n / shape[0]; ++r) {
        quantize_row_ref(type, values.data() + r * shape[0], bytes.data() + r * row_size(type, shape[0]), shape[0]);
      }
      ASSERT_TRUE(w.add_tensor(name, type, shape, bytes).ok());
    };
    add("token_embd.weight", {512, 64}, matrix_type, 1);
    add("output_norm.weight", {512}, TensorType::kF32, 2);
    for (int l = 0; l < 2; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      add(p + "attn_norm.weight", {512}, TensorType::kF32, 10 + l);
      add(p + "attn_v.weight", {512, 32}, matrix_type, 20 + l);
      add(p + "ffn_down.weight", {512, 32}, matrix_type, 30 + l);
      add(p + "ffn_up.weight", {512, 32}, matrix_type, 40 + l);
    }
    const std::string file = path(matrix_type == TensorType::kF32 ? "source.gguf" : "source_q.gguf");
    EXPECT_TRUE(w.write(file).ok());
    return file;
  }

  QuantizeOptions options(std::string_view mix) {
    QuantizeOptions o;
    o.mix = *find_mix(mix);
    o.n_threads = 2;
    return o;
  }

  fs::path dir_;
};

TEST_F(QuantizeModelTest, Q4_K_M_TypesMetadataAndValues) {
  auto source = gguf::File::open(write_source());
  ASSERT_TRUE(source.ok());
  auto summary = quantize_model(*source, path("out.gguf"), options("Q4_K_M"));
  ASSERT_TRUE(summary.ok()) << summary.status().to_string();
  EXPECT_EQ(summary->n_fallbacks, 0);
  EXPECT_LT(summary->output_tensor_bytes, summary->source_tensor_bytes / 4);

  auto out = gguf::File::open(path("out.gguf"));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->get_int_or("general.file_type", -1), 15);
  EXPECT_EQ(out->get_string_or("general.name", ""), "tiny");
  EXPECT_EQ(out->get_string_or("tokenmill.quantize.type", ""), "Q4_K_M");
  EXPECT_EQ(out->get_string_or("tokenmill.quantize.method", ""), "rtn");
  EXPECT_EQ(out->get_string_or("tokenmill.quantize.source", ""), "source.gguf");
  EXPECT_FALSE(out->get_bool_or("tokenmill.quantize.requantized", true));
  EXPECT_EQ(out->find_tensor("token_embd.weight")->type, TensorType::kQ6_K);  // tied output
  EXPECT_EQ(out->find_tensor("output_norm.weight")->type, TensorType::kF32);
  // With 2 layers only the last (layer >= 7n/8) gets more bits.
  EXPECT_EQ(out->find_tensor("blk.1.attn_v.weight")->type, TensorType::kQ6_K);
  EXPECT_EQ(out->find_tensor("blk.0.attn_v.weight")->type, TensorType::kQ4_K);
  EXPECT_EQ(out->find_tensor("blk.0.ffn_up.weight")->type, TensorType::kQ4_K);

  // Values: each tensor is the source within its type's error.
  for (const gguf::TensorInfo& t : out->tensors()) {
    const gguf::TensorInfo* s = source->find_tensor(t.name);
    ASSERT_NE(s, nullptr);
    const int64_t n = t.n_elements();
    std::vector<float> a(n), b(n);
    dequantize_row(s->type, source->tensor_data(*s).data(), a.data(), n);
    dequantize_row(t.type, out->tensor_data(t).data(), b.data(), n);
    double err = 0, energy = 0;
    for (int64_t i = 0; i < n; ++i) {
      err += (a[i] - b[i]) * (a[i] - b[i]);
      energy += a[i] * a[i];
    }
    EXPECT_LT(std::sqrt(err / energy), 0.12) << t.name;
  }
}

TEST_F(QuantizeModelTest, FloatMixesAndRequantizing) {
  auto source = gguf::File::open(write_source(TensorType::kQ8_0));
  ASSERT_TRUE(source.ok());
  int64_t warned = 0;
  QuantizeOptions o = options("F16");
  o.on_requantize = [&](int64_t n) { warned = n; };
  ASSERT_TRUE(quantize_model(*source, path("f16.gguf"), o).ok());
  EXPECT_EQ(warned, 7);
  auto out = gguf::File::open(path("f16.gguf"));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->find_tensor("blk.1.ffn_down.weight")->type, TensorType::kF16);
  EXPECT_EQ(out->find_tensor("blk.1.attn_norm.weight")->type, TensorType::kF32);
  EXPECT_TRUE(out->get_bool_or("tokenmill.quantize.requantized", false));
  EXPECT_EQ(out->get_int_or("general.file_type", -1), 1);

  // Q8_0 -> Q8_0 copies the tensors unchanged.
  ASSERT_TRUE(quantize_model(*source, path("q8.gguf"), options("Q8_0")).ok());
  auto q8 = gguf::File::open(path("q8.gguf"));
  ASSERT_TRUE(q8.ok());
  const gguf::TensorInfo* a = source->find_tensor("blk.0.ffn_up.weight");
  const gguf::TensorInfo* b = q8->find_tensor("blk.0.ffn_up.weight");
  ASSERT_EQ(b->type, TensorType::kQ8_0);
  EXPECT_TRUE(std::equal(source->tensor_data(*a).begin(), source->tensor_data(*a).end(), q8->tensor_data(*b).begin()));
}

TEST_F(QuantizeModelTest, ImportanceMatrixIsUsedAndChecked) {
  auto source = gguf::File::open(write_source());
  ASSERT_TRUE(source.ok());
  ImportanceMatrix imatrix;
  imatrix.datasets = {"calib.txt"};
  imatrix.n_chunks = 3;
  ImportanceEntry entry;
  entry.sum_sq.assign(512, 2.0);
  entry.sum_sq[7] = 500.0;
  entry.n_tokens = 10;
  imatrix.entries["blk.0.ffn_up.weight"] = entry;
  imatrix.entries["blk.1.attn_v.weight"] = entry;
  ASSERT_TRUE(write_importance_matrix(imatrix, path("m.imatrix")).ok());
  auto read = read_importance_matrix(path("m.imatrix"));
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  ASSERT_EQ(read->entries.size(), 2u);
  EXPECT_EQ(read->entries.at("blk.0.ffn_up.weight").n_tokens, 10);
  EXPECT_DOUBLE_EQ(read->entries.at("blk.0.ffn_up.weight").sum_sq[7], 500.0);
  EXPECT_EQ(read->datasets, std::vector<std::string>{"calib.txt"});
  EXPECT_EQ(read->n_chunks, 3u);

  QuantizeOptions o = options("Q4_K_M");
  o.imatrix = &*read;
  o.imatrix_path = path("m.imatrix");
  auto summary = quantize_model(*source, path("im.gguf"), o);
  ASSERT_TRUE(summary.ok()) << summary.status().to_string();
  EXPECT_EQ(summary->n_with_importance, 2);
  auto out = gguf::File::open(path("im.gguf"));
  EXPECT_EQ(out->get_string_or("tokenmill.quantize.method", ""), "imatrix");
  EXPECT_EQ(out->get_string_or("tokenmill.quantize.imatrix.file", ""), "m.imatrix");

  // From another model: a tensor this one lacks, or a different width.
  ImportanceMatrix other = *read;
  other.entries["blk.9.ffn_up.weight"] = entry;
  o.imatrix = &other;
  auto failed = quantize_model(*source, path("bad.gguf"), o);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("blk.9.ffn_up.weight"), std::string::npos);
  EXPECT_NE(failed.status().message().find("another model"), std::string::npos);
  other = *read;
  other.entries["blk.0.ffn_up.weight"].sum_sq.resize(640);
  failed = quantize_model(*source, path("bad.gguf"), o);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("640"), std::string::npos);
  EXPECT_FALSE(fs::exists(path("bad.gguf")));
}

TEST_F(QuantizeModelTest, NotAnImatrixOrNotAModel) {
  const std::string model = write_source();
  auto not_imatrix = read_importance_matrix(model);
  ASSERT_FALSE(not_imatrix.ok());
  EXPECT_NE(not_imatrix.status().message().find("not an importance matrix"), std::string::npos);
  EXPECT_FALSE(read_importance_matrix(path("missing.imatrix")).ok());

  gguf::Writer w;
  w.set_string("general.type", "imatrix");
  ASSERT_TRUE(w.write(path("no_model.gguf")).ok());
  auto file = gguf::File::open(path("no_model.gguf"));
  ASSERT_TRUE(file.ok());
  auto failed = quantize_model(*file, path("out.gguf"), options("Q4_0"));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("general.architecture"), std::string::npos);
  EXPECT_FALSE(fs::exists(path("out.gguf")));
}

}  // namespace
}  // namespace tokenmill::quant
