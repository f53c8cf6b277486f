// repack_for_kernels (model/weights.h): the default model gives the same logits, bit for
// bit, with its Q8_0 matrices (the tied 262,144-row embedding / output and attn_v) in
// 16-row panels as in the file's layout, for a prompt and for decode steps.

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "model/model.h"
#include "ops/kv_storage.h"
#include "test_paths.h"

namespace tokenmill::model {
namespace {

std::vector<std::vector<float>> run(Model& model) {
  const std::vector<int32_t> prompt = {2, 818, 5279, 529, 7001, 563, 496, 236743, 236770, 236771, 236772, 107};
  ops::KvStorage kv(model.kv_shape(4));
  std::vector<int32_t> table(4);
  std::iota(table.begin(), table.end(), 0);
  std::vector<std::vector<float>> steps;
  std::vector<float> logits;
  Batch prefill;
  prefill.add_sequence(prompt, 0, table, true);
  EXPECT_TRUE(model.forward(prefill, kv, logits).ok());
  steps.push_back(logits);
  int32_t pos = static_cast<int32_t>(prompt.size());
  for (int i = 0; i < 3; ++i) {
    const int32_t next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    Batch step;
    step.add_sequence({next}, pos++, table, true);
    EXPECT_TRUE(model.forward(step, kv, logits).ok());
    steps.push_back(logits);
  }
  return steps;
}

TEST(Repack, PanelLayoutGivesTheFileLayoutsLogits) {
  LoadOptions packed_options;
  LoadOptions file_options;
  file_options.repack = false;
  auto packed = load_model(testing::default_model_path(), packed_options);
  auto file = load_model(testing::default_model_path(), file_options);
  ASSERT_TRUE(packed.ok()) << packed.status().to_string();
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  const auto a = run(**packed);
  const auto b = run(**file);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size());
    EXPECT_EQ(std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)), 0) << "step " << i;
  }
}

}  // namespace
}  // namespace tokenmill::model
