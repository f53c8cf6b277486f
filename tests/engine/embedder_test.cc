// Embedder: requests submitted together are answered with the vectors each would get
// alone (bit for bit: the encoder's batch does not mix inputs), large requests run
// alone, and requests left at shutdown are answered with an error, never dropped.
#include "engine/embedder.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <future>

#include "ops/cpu/cpu_backend.h"

namespace tokenmill::engine {
namespace {

std::unique_ptr<model::BertEncoder> load_minilm() {
  const char* source = std::getenv("TOKENMILL_SOURCE_DIR");
  const std::string path =
      std::string(source && *source ? source : TOKENMILL_SOURCE_DIR) + "/models/all-minilm-l6-v2-f16.gguf";
  auto file = gguf::File::open(path);
  EXPECT_TRUE(file.ok()) << path << " (scripts/setup converts it): " << file.status().to_string();
  if (!file.ok()) return nullptr;
  auto encoder = model::BertEncoder::load(std::make_shared<const gguf::File>(std::move(file).value()),
                                          std::make_unique<ops::CpuBackend>(2));
  EXPECT_TRUE(encoder.ok()) << encoder.status().to_string();
  return encoder.ok() ? std::move(encoder).value() : nullptr;
}

std::vector<std::vector<int32_t>> inputs_for(int i) {
  // [CLS] a few word ids [SEP], of different lengths.
  std::vector<int32_t> ids = {101};
  for (int k = 0; k < 3 + i % 5; ++k) ids.push_back(2000 + 37 * i + k);
  ids.push_back(102);
  return {ids, {101, 7592, 102}};
}

TEST(Embedder, BatchedRequestsGetTheirOwnVectorsBitForBit) {
  auto encoder = load_minilm();
  ASSERT_TRUE(encoder);
  std::vector<std::vector<std::vector<float>>> alone(8);
  for (int i = 0; i < 8; ++i) encoder->embed(inputs_for(i), alone[i]);

  Embedder embedder(*encoder);
  std::vector<std::promise<EmbeddingResult>> promises(8);
  for (int i = 0; i < 8; ++i) {
    embedder.submit(inputs_for(i), [&promises, i](EmbeddingResult r) { promises[i].set_value(std::move(r)); });
  }
  for (int i = 0; i < 8; ++i) {
    EmbeddingResult r = promises[i].get_future().get();
    ASSERT_TRUE(r.status.ok()) << r.status.to_string();
    EXPECT_EQ(r.vectors, alone[i]) << i;
    EXPECT_EQ(r.n_tokens, static_cast<int64_t>(inputs_for(i)[0].size() + 3));
  }
  EXPECT_EQ(embedder.n_requests(), 8);
  EXPECT_LE(embedder.n_batches(), 8);
}

TEST(Embedder, RequestsLeftAtShutdownAreAnsweredWithAnError) {
  auto encoder = load_minilm();
  ASSERT_TRUE(encoder);
  std::atomic<int> answered{0}, failed{0};
  {
    Embedder embedder(*encoder, EmbedderConfig{.max_batch_tokens = 16});
    for (int i = 0; i < 32; ++i) {
      embedder.submit(inputs_for(i), [&](EmbeddingResult r) {
        ++answered;
        if (!r.status.ok()) ++failed;
      });
    }
    embedder.shutdown();
    embedder.submit(inputs_for(0), [&](EmbeddingResult r) {  // after shutdown: refused at once
      ++answered;
      if (!r.status.ok()) ++failed;
    });
  }
  EXPECT_EQ(answered.load(), 33);
  EXPECT_GE(failed.load(), 1);
}

}  // namespace
}  // namespace tokenmill::engine
