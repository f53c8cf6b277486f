#include "convert/safetensors.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "convert/safetensors_bytes.h"

namespace tokenmill::convert {
namespace {

using testing::f32_bytes;
using testing::safetensors_bytes;
using testing::TensorBytes;

std::vector<TensorBytes> two_tensors() {
  return {{"a.weight", "F32", {2, 3}, f32_bytes({1, 2, 3, 4, 5, 6})},
          {"b.bias", "BF16", {2}, {0x80, 0x3f, 0x00, 0xc0}}};  // 1.0, -2.0
}

Status parse_error(const std::string& header, size_t data_bytes) {
  const auto bytes = safetensors_bytes(header, std::vector<uint8_t>(data_bytes));
  auto file = SafetensorsFile::parse(bytes, "x.safetensors");
  return file.ok() ? Status() : file.status();
}

TEST(Safetensors, ReadsNamesShapesAndValues) {
  const auto bytes = safetensors_bytes(two_tensors());
  auto file = SafetensorsFile::parse(bytes, "x.safetensors");
  ASSERT_TRUE(file.ok()) << file.status().message();
  ASSERT_EQ(file->tensors().size(), 2u);
  const SafeTensor* a = nullptr;
  const SafeTensor* b = nullptr;
  for (const SafeTensor& t : file->tensors()) (t.name == "a.weight" ? a : b) = &t;
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->dtype, Dtype::kF32);
  EXPECT_EQ(*to_f32(*a), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(*to_f32(*b), (std::vector<float>{1.0f, -2.0f}));
}

TEST(Safetensors, RefusesEachMalformedHeaderWithOneClearLine) {
  struct Case {
    const char* what;
    std::string header;
    size_t data_bytes;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"offset past the end", R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8,
       "lie outside the 8 data bytes"},
      {"overlapping tensors",
       R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "u": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
       12, "overlap"},
      {"dtype and size disagree", R"({"t": {"dtype": "F16", "shape": [4], "data_offsets": [0, 16]}})", 16,
       "F16 of 4 elements needs 8"},
      {"unknown dtype", R"({"t": {"dtype": "F8_E9M0", "shape": [4], "data_offsets": [0, 4]}})", 4,
       "dtype 'F8_E9M0'"},
      {"a name twice",
       R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "t": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
       8, "'t' is named twice"},
      {"negative offset", R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", 4, "not a non-negative"},
      {"end before begin", R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})", 8, "lie outside"},
      {"shape product overflows", R"({"t": {"dtype": "F32", "shape": [1099511627776, 1099511627776], "data_offsets": [0, 4]}})",
       4, "more elements than fit"},
      {"not an object", R"([1, 2, 3])", 0, "not a JSON object"},
      {"not JSON", R"({"t": )", 0, "not a JSON object"},
      {"missing field", R"({"t": {"dtype": "F32", "shape": [1]}})", 4, "lacks dtype, shape or data_offsets"},
  };
  for (const Case& c : cases) {
    const Status s = parse_error(c.header, c.data_bytes);
    EXPECT_FALSE(s.ok()) << c.what;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << c.what << ": " << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << c.what;
    EXPECT_EQ(s.message().rfind("x.safetensors", 0), 0u) << c.what << ": the message names the file";
  }
}

TEST(Safetensors, RefusesAHeaderLengthPastTheEnd) {
  std::vector<uint8_t> bytes = safetensors_bytes(two_tensors());
  bytes[0] = 0xff;
  bytes[1] = 0xff;
  auto file = SafetensorsFile::parse(bytes, "x.safetensors");
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("past the end"), std::string::npos) << file.status().message();
  auto tiny = SafetensorsFile::parse(std::vector<uint8_t>(5), "x.safetensors");
  EXPECT_FALSE(tiny.ok());
}

TEST(Safetensors, ShardedDirectoriesFollowTheIndex) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("tm_shards_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto tensors = two_tensors();
  testing::write_file((dir / "model-00001-of-00002.safetensors").string(), safetensors_bytes({tensors[0]}));
  testing::write_file((dir / "model-00002-of-00002.safetensors").string(), safetensors_bytes({tensors[1]}));
  testing::write_file((dir / "model.safetensors.index.json").string(),
                      std::string(R"({"metadata": {}, "weight_map": {"a.weight": "model-00001-of-00002.safetensors",
                                     "b.bias": "model-00002-of-00002.safetensors"}})"));
  auto model = SafetensorsModel::open_dir(dir.string());
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model->tensors().size(), 2u);
  ASSERT_NE(model->find("b.bias"), nullptr);
  EXPECT_EQ(*to_f32(*model->find("b.bias")), (std::vector<float>{1.0f, -2.0f}));

  // An index naming a tensor that its shard lacks, or a shard outside the directory.
  testing::write_file((dir / "model.safetensors.index.json").string(),
                      std::string(R"({"weight_map": {"a.weight": "model-00001-of-00002.safetensors",
                                     "c.weight": "model-00002-of-00002.safetensors"}})"));
  auto missing = SafetensorsModel::open_dir(dir.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("'c.weight' listed by the index is missing"), std::string::npos)
      << missing.status().message();
  testing::write_file((dir / "model.safetensors.index.json").string(),
                      std::string(R"({"weight_map": {"a.weight": "../elsewhere.safetensors"}})"));
  EXPECT_FALSE(SafetensorsModel::open_dir(dir.string()).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tokenmill::convert
