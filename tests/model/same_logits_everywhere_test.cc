// The default model gives the same logits, bit for bit, on every target and every vector
// set its kernels have (x86-64 AVX2, AVX-512, AMX; arm64 NEON with and without sdot): a
// prompt and three greedy decode steps are hashed and compared with the hash recorded on
// x86-64 (tests/fixtures/model/default_model_logits.txt; tools/make_kernel_bits.sh
// writes it through TOKENMILL_WRITE_KERNEL_BITS). scripts/test_arm64 runs it under
// qemu-aarch64; scripts/test under each TOKENMILL_ISA cap the CPU allows.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "model/model.h"
#include "ops/kv_storage.h"
#include "quant/kernels/dispatch.h"
#include "recorded_bits.h"
#include "test_paths.h"

namespace tokenmill::model {
namespace {

TEST(SameLogitsEverywhere, DefaultModelMatchesTheRecordedBits) {
  // The scalar reference sums in ggml's order, not the vector bodies': not under the
  // contract (only a CPU with no vector set, or TOKENMILL_ISA=scalar, dispatches to it).
  const std::string isa = quant::best_dot_kernel(gguf::TensorType::kQ4_K).isa;
  ASSERT_NE(isa, "scalar") << "the scalar reference is not under the same-bits contract";
  auto loaded = load_model(testing::default_model_path(), LoadOptions{});
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  Model& model = **loaded;
  const std::vector<int32_t> prompt = {2, 818, 5279, 529, 7001, 563, 496, 236743, 236770, 236771, 236772, 107};
  ops::KvStorage kv(model.kv_shape(4));
  std::vector<int32_t> table(4);
  std::iota(table.begin(), table.end(), 0);
  std::vector<float> logits;
  testing::BitsHash h;  // over every step's logits
  auto mix = [&h, &logits] { h.add(logits.data(), logits.size() * sizeof(float)); };
  Batch prefill;
  prefill.add_sequence(prompt, 0, table, true);
  ASSERT_TRUE(model.forward(prefill, kv, logits).ok());
  mix();
  int32_t pos = static_cast<int32_t>(prompt.size());
  std::string picks;
  for (int i = 0; i < 3; ++i) {
    const int32_t next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    picks += " " + std::to_string(next);
    Batch step;
    step.add_sequence({next}, pos++, table, true);
    ASSERT_TRUE(model.forward(step, kv, logits).ok());
    mix();
  }
  const std::string line = "logits " + h.hex() + " picks" + picks + "\n";
  std::printf("[ kernels  ] %s (%s): %s", cpu_features().kernel_set(), isa.c_str(), line.c_str());
  EXPECT_EQ(line, testing::recorded_bits("model/default_model_logits.txt", line));
}

}  // namespace
}  // namespace tokenmill::model
