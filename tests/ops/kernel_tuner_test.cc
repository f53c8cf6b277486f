// ops/cpu/kernel_tuner.h: the tuner times the variants where a model's matrices have
// them, settles each weight type's decode width apart, caches the choice per CPU, thread
// count and build, reuses it, and leaves the defaults under TOKENMILL_TUNE=off; every
// variant gives the same bits.

#include "ops/cpu/kernel_tuner.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "base/cpu_features.h"
#include "ops/cpu/cpu_backend.h"
#include "quant/kernels/dispatch.h"
#include "quant/panel_layout.h"
#include "quant/quant.h"
#include "quant/type_traits.h"

namespace tokenmill::ops {
namespace {

using gguf::TensorType;

// A matrix of random rows, repacked into panels where the model loader would (this CPU's
// kernels have a panel kernel for the type), else in the file's layout.
struct PackedMatrix {
  std::vector<uint8_t> bytes;
  WeightMatrix w;
};

PackedMatrix packed_matrix(TensorType type, int64_t n_rows, int64_t n_cols) {
  PackedMatrix m;
  const size_t row_bytes = quant::row_size(type, n_cols);
  std::vector<uint8_t> rows(row_bytes * static_cast<size_t>(n_rows));
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n_cols));
  for (int64_t r = 0; r < n_rows; ++r) {
    for (float& v : x) v = normal(rng);
    quant::quantize_row_ref(type, x.data(), rows.data() + r * row_bytes, n_cols);
  }
  const bool panels = quant::best_panel_kernel(type) != nullptr;
  m.bytes.resize(rows.size());
  if (panels) {
    quant::pack_panels(type, rows.data(), n_rows, row_bytes, m.bytes.data());
  } else {
    m.bytes = rows;
  }
  m.w = {.type = type, .data = m.bytes.data(), .n_cols = n_cols, .n_rows = n_rows, .row_bytes = row_bytes,
         .panels = panels};
  return m;
}

PackedMatrix packed_q4_k(int64_t n_rows, int64_t n_cols) { return packed_matrix(TensorType::kQ4_K, n_rows, n_cols); }

class KernelTunerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("tokenmill-tuner-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    ::setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
    ::unsetenv("TOKENMILL_TUNE");
  }
  void TearDown() override {
    quant::set_kernel_tuning({});
    ::unsetenv("XDG_CACHE_HOME");
    ::unsetenv("TOKENMILL_TUNE");
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
};

TEST_F(KernelTunerTest, TimesOnceThenReadsTheCacheAndOffKeepsTheDefaults) {
  CpuBackend backend(2);
  PackedMatrix m = packed_q4_k(256, 2048);
  const std::vector<const WeightMatrix*> matrices = {&m.w};
  const bool has_variants = quant::best_panel_kernel(TensorType::kQ4_K) != nullptr &&
                            quant::tuning_changes_kernels(TensorType::kQ4_K);
  std::printf("[ tuner    ] Q4_K panel variants on this CPU: %s\n", has_variants ? "yes" : "none");

  const TuningReport first = tune_kernels(backend, matrices, /*force_timing=*/false);
  if (!has_variants) {
    EXPECT_EQ(first.source, "nothing to tune");
    EXPECT_FALSE(std::filesystem::exists(first.cache_path));
    return;
  }
  EXPECT_EQ(first.source, "timed");
  ASSERT_EQ(first.timings.size(), quant::kernel_tunings().size());
  for (const TuningTiming& t : first.timings) EXPECT_GT(t.seconds, 0) << t.variant;
  EXPECT_EQ(first.timed_bytes, m.w.n_bytes());
  EXPECT_EQ(quant::to_string(quant::kernel_tuning()), quant::to_string(first.chosen));
  EXPECT_EQ(first.cache_path, (dir_ / "tokenmill" / "kernel-tuning.tsv").string());
  std::ifstream in(first.cache_path);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line, first.cache_key + "\t" + quant::to_string(first.chosen));
  EXPECT_NE(first.cache_key.find("threads=2"), std::string::npos);

  quant::set_kernel_tuning({.prefetch_weights = !first.chosen.prefetch_weights});
  const TuningReport second = tune_kernels(backend, matrices, /*force_timing=*/false);
  EXPECT_EQ(second.source, "cache");
  EXPECT_TRUE(second.timings.empty());
  EXPECT_EQ(quant::to_string(quant::kernel_tuning()), quant::to_string(first.chosen));

  // Another thread count is another key: timed again, both lines kept.
  CpuBackend one_thread(1);
  EXPECT_EQ(tune_kernels(one_thread, matrices, false).source, "timed");
  std::ifstream again(first.cache_path);
  int lines = 0;
  while (std::getline(again, line)) ++lines;
  EXPECT_EQ(lines, 2);

  ::setenv("TOKENMILL_TUNE", "off", 1);
  quant::set_kernel_tuning({.prefetch_weights = false});
  const TuningReport off = tune_kernels(backend, matrices, /*force_timing=*/true);
  EXPECT_EQ(off.source, "off");
  EXPECT_TRUE(quant::kernel_tuning().prefetch_weights) << "the defaults";
}

// A tuning names each type on its variant and reads back as itself; the dispatcher gives
// the decode steps of exactly those types their variant kernels.
TEST(KernelTuning, PutsEachTypeOnItsVariantApartAndReadsBackAsWritten) {
  const uint32_t candidates = quant::decode_variant_candidates();
  std::vector<TensorType> with_variant;
  for (const quant::TypeTraits& t : quant::all_type_traits()) {
    if (candidates & quant::decode_variant_bit(t.type)) with_variant.push_back(t.type);
  }
  std::printf("[ tuning   ] %zu types have a decode variant here\n", with_variant.size());
  const std::string_view q4_k_isa = quant::best_dot_kernel(TensorType::kQ4_K).isa;
  // AVX-512 CPUs narrow Q4_K and Q6_K among others; every x86 set gathers IQ3_S's grid.
  EXPECT_EQ((candidates & quant::decode_variant_bit(TensorType::kQ4_K)) != 0, q4_k_isa == "avx512");
  EXPECT_EQ((candidates & quant::decode_variant_bit(TensorType::kIQ3_S)) != 0,
            q4_k_isa == "avx512" || q4_k_isa == "avx2");

  std::vector<quant::KernelTuning> tunings = {{.prefetch_weights = false, .decode_variant = 0},
                                              {.prefetch_weights = true, .decode_variant = candidates}};
  for (const TensorType type : with_variant) tunings.push_back({.decode_variant = quant::decode_variant_bit(type)});
  for (const quant::KernelTuning& tuning : tunings) {
    const std::string text = quant::to_string(tuning);
    quant::KernelTuning parsed{.prefetch_weights = !tuning.prefetch_weights, .decode_variant = ~0u};
    ASSERT_TRUE(quant::parse_kernel_tuning(text, parsed)) << text;
    EXPECT_EQ(parsed.prefetch_weights, tuning.prefetch_weights) << text;
    EXPECT_EQ(parsed.decode_variant, tuning.decode_variant) << text;
  }
  EXPECT_EQ(quant::to_string({}), "prefetch_weights=1 decode_variant=none");
  quant::KernelTuning untouched;
  for (const char* bad : {"prefetch_weights=2 decode_variant=none", "prefetch_weights=1", "decode_variant=none",
                          "prefetch_weights=1 decode_variant=q9_X", "prefetch_weights=1 decode_variant=",
                          "prefetch_weights=1 decode_variant=f32"}) {
    EXPECT_FALSE(quant::parse_kernel_tuning(bad, untouched)) << bad;
  }
  if (!with_variant.empty()) {
    const std::string twice = "prefetch_weights=1 decode_variant=" +
                              std::string(quant::type_traits(with_variant[0]).name) + "," +
                              std::string(quant::type_traits(with_variant[0]).name);
    EXPECT_FALSE(quant::parse_kernel_tuning(twice, untouched)) << twice;
  }

  // One type on its variant: its decode steps on other kernels, its prefill and every
  // other type as chosen.
  for (const TensorType type : with_variant) {
    quant::set_kernel_tuning({.decode_variant = quant::decode_variant_bit(type)});
    for (const TensorType other : with_variant) {
      const std::string_view own = quant::best_dot_kernel(other).isa;
      EXPECT_EQ(quant::dot_kernel_for(other, 1).isa == own, other != type) << quant::type_traits(other).name;
      EXPECT_EQ(quant::dot_kernel_for(other, quant::kDecodeTokens + 1).isa, own);
    }
  }
  // decode_kernel_isa names what dot_kernel_for gives under each tuning, without setting it.
  for (const quant::KernelTuning& tuning : quant::kernel_tunings()) {
    for (const TensorType type : with_variant) {
      const std::string named = quant::decode_kernel_isa(tuning, type);
      const quant::KernelTuning before = quant::kernel_tuning();
      quant::set_kernel_tuning(tuning);
      EXPECT_EQ(named, quant::dot_kernel_for(type, 1).isa) << quant::type_traits(type).name << " " << quant::to_string(tuning);
      quant::set_kernel_tuning(before);
    }
  }
  quant::set_kernel_tuning({});
  for (const TensorType type : with_variant) {
    EXPECT_EQ(std::string_view(quant::dot_kernel_for(type, 1).isa), quant::best_dot_kernel(type).isa);
  }
}

TEST_F(KernelTunerTest, EveryVariantGivesTheSameBits) {
  CpuBackend backend(2);
  // Q4_K in panels where this CPU repacks it; the others as the loader leaves them
  // (decode_variant switches their decode kernels too: IQ3_S and IQ3_XXS to the
  // gathering kernels, the rest to AVX2's).
  std::vector<PackedMatrix> matrices;
  matrices.push_back(packed_q4_k(96, 768));
  for (const TensorType type : {TensorType::kQ6_K, TensorType::kIQ4_XS, TensorType::kQ8_0, TensorType::kIQ3_S,
                                TensorType::kIQ3_XXS, TensorType::kIQ2_XS, TensorType::kTQ2_0}) {
    matrices.push_back(packed_matrix(type, 48, 512));
  }
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const PackedMatrix& m : matrices) {
    for (const int64_t n_tokens : {1, 2, 3, 8, 21}) {
      std::vector<float> x(static_cast<size_t>(n_tokens * m.w.n_cols));
      for (float& v : x) v = normal(rng);
      std::vector<float> first;
      for (const quant::KernelTuning& tuning : quant::kernel_tunings()) {
        quant::set_kernel_tuning(tuning);
        std::vector<float> y(static_cast<size_t>(n_tokens * m.w.n_rows));
        backend.matmul(m.w, x.data(), n_tokens, y.data());
        if (first.empty()) {
          first = y;
          continue;
        }
        EXPECT_EQ(std::memcmp(first.data(), y.data(), y.size() * sizeof(float)), 0)
            << quant::type_traits(m.w.type).name << ", " << n_tokens << " tokens, " << quant::to_string(tuning);
      }
    }
  }
}

}  // namespace
}  // namespace tokenmill::ops
