// Model::set_matmul_observer: the observer sees every matmul input (7 per layer and the
// output projection) with its weight and shape, the logits do not change, and removing
// it leaves the original back end.
#include <gtest/gtest.h>

#include <map>
#include <numeric>

#include "model/tiny_model.h"

namespace tokenmill::model {
namespace {

std::vector<float> run_once(Model& model, const std::vector<int32_t>& tokens) {
  ops::KvStorage kv(model.kv_shape(4));
  std::vector<int32_t> table(4);
  std::iota(table.begin(), table.end(), 0);
  Batch batch;
  batch.add_sequence(tokens, 0, table, true);
  std::vector<float> logits;
  EXPECT_TRUE(model.forward(batch, kv, logits).ok());
  return logits;
}

TEST(MatmulObserver, SeesEveryMatmulAndChangesNothing) {
  auto loaded = testing::load_tiny_model(testing::tiny_llama_spec());
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  Model& model = **loaded;
  const std::vector<int32_t> tokens = {1, 5, 9, 13, 17};
  const std::vector<float> plain = run_once(model, tokens);
  ops::Backend* original = &model.backend();

  std::map<const uint8_t*, int64_t> rows_seen;  // weight data -> activation rows observed
  model.set_matmul_observer([&](const ops::WeightMatrix& w, const float* x, int64_t n_tokens) {
    EXPECT_NE(x, nullptr);
    rows_seen[w.data] += n_tokens;
  });
  const std::vector<float> observed = run_once(model, tokens);
  EXPECT_EQ(observed, plain);

  const ModelWeights& w = model.weights();
  const int64_t n_layers = static_cast<int64_t>(w.layers.size());
  EXPECT_EQ(rows_seen.size(), static_cast<size_t>(7 * n_layers + 1));
  EXPECT_EQ(rows_seen[w.layers[0].wq.data], 5);
  EXPECT_EQ(rows_seen[w.layers[1].ffn_down.data], 5);
  EXPECT_EQ(rows_seen[w.output.data], 1);  // only the output row goes through the projection

  model.set_matmul_observer(nullptr);
  EXPECT_EQ(&model.backend(), original);
  EXPECT_EQ(run_once(model, tokens), plain);
}

// Model::set_op_times: every operation of a pass is counted under its label (each
// matmul by type and shape, the products of one input in one label), the logits do not
// change, it stacks with a matmul observer, and clearing both leaves the original back end.
TEST(OpTimes, CountsEveryOperationAndChangesNothing) {
  auto loaded = testing::load_tiny_model(testing::tiny_llama_spec());
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  Model& model = **loaded;
  const std::vector<int32_t> tokens = {1, 5, 9, 13, 17};
  const std::vector<float> plain = run_once(model, tokens);
  ops::Backend* original = &model.backend();

  ops::OpTimes times;
  int64_t observed = 0;
  model.set_op_times(&times);
  model.set_matmul_observer([&](const ops::WeightMatrix&, const float*, int64_t) { ++observed; });
  EXPECT_EQ(run_once(model, tokens), plain);

  const int64_t n_layers = static_cast<int64_t>(model.weights().layers.size());
  EXPECT_EQ(observed, 7 * n_layers + 1);
  int64_t matmul_calls = 0, products = 0;  // q, k, v in one call, gate and up in one
  for (const auto& [label, t] : times.times()) {
    EXPECT_GT(t.calls, 0) << label;
    EXPECT_GE(t.seconds, 0.0) << label;
    if (label.rfind("matmul ", 0) != 0) continue;
    matmul_calls += t.calls;
    int64_t per_call = 1;
    for (size_t at = label.find(" + "); at != std::string::npos; at = label.find(" + ", at + 3)) ++per_call;
    products += t.calls * per_call;
  }
  EXPECT_EQ(matmul_calls, 4 * n_layers + 1);
  EXPECT_EQ(products, 7 * n_layers + 1);
  EXPECT_EQ(times.times().count("attention"), 1u);
  EXPECT_EQ(times.times().at("attention").calls, n_layers);
  EXPECT_GT(times.total_seconds(), 0.0);

  model.set_op_times(nullptr);
  model.set_matmul_observer(nullptr);
  EXPECT_EQ(&model.backend(), original);
  times.clear();
  EXPECT_EQ(run_once(model, tokens), plain);
  EXPECT_TRUE(times.times().empty());  // no longer timed
}

}  // namespace
}  // namespace tokenmill::model
