// repack_for_kernels (model/weights.h): the default model gives the same logits, bit for
// bit, with its Q8_0 matrices (the tied 262,144-row embedding / output and attn_v) in
// 16-row panels as in the file's layout, for a prompt and for decode steps; and its greedy
// picks are found in those panels without the logits being stored.

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "base/first_max.h"
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

// The greedy picks of a forward pass are each logits row's first largest entry, also
// when the caller wants nothing else and the logits are never stored (argmax_only).
TEST(Repack, ArgmaxOnlyForwardGivesEachRowsFirstLargestLogit) {
  auto loaded = load_model(testing::default_model_path(), LoadOptions{});
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  Model& model = **loaded;
  const int32_t n_vocab = model.config().n_vocab;
  auto run_batch = [&](bool argmax_only, std::vector<float>& logits) {
    ops::KvStorage kv(model.kv_shape(8));
    Batch batch;
    batch.add_sequence({2, 818, 5279, 529, 7001}, 0, {0, 1, 2, 3}, true);
    batch.add_sequence({2, 236743, 236770, 236771, 236772, 107, 563}, 0, {4, 5, 6, 7}, true);
    std::vector<int32_t> argmax;
    EXPECT_TRUE(model.forward(batch, kv, logits, &argmax, argmax_only).ok());
    return argmax;
  };
  std::vector<float> logits, unused;
  const std::vector<int32_t> with_logits = run_batch(false, logits);
  const std::vector<int32_t> alone = run_batch(true, unused);
  ASSERT_EQ(with_logits.size(), 2u);
  std::vector<int32_t> scanned(2);
  first_max_index_rows(logits.data(), 2, n_vocab, scanned.data());
  EXPECT_EQ(with_logits, scanned);
  EXPECT_EQ(alone, scanned);
}

}  // namespace
}  // namespace tokenmill::model
