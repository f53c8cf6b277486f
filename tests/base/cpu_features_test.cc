#include "base/cpu_features.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace tokenmill {
namespace {

// The kernel set named is the widest one the features allow, and each set implies the
// ones below it.
TEST(CpuFeatures, KernelSetFollowsTheFeatures) {
  const CpuFeatures& f = cpu_features();
  const std::string set = f.kernel_set();
  if (f.has_amx_kernels()) {
    EXPECT_EQ(set, "amx");
    EXPECT_TRUE(f.has_avx512_kernels());
  } else if (f.has_avx512_kernels()) {
    EXPECT_EQ(set, "avx512");
  } else if (f.has_avx_vnni_kernels()) {
    EXPECT_EQ(set, "avxvnni");
  } else if (f.has_avx2_kernels()) {
    EXPECT_EQ(set, "avx2");
  } else if (f.has_neon_kernels()) {
    EXPECT_EQ(set, "neon");
  } else {
    EXPECT_EQ(set, "scalar");
  }
  if (f.has_avx512_kernels()) {
    EXPECT_TRUE(f.has_avx2_kernels());
  }
  std::printf("[ cpu      ] %s: %s (%s)\n", cpu_brand().c_str(), set.c_str(), f.to_string().c_str());
}

// TOKENMILL_ISA caps what is reported but never adds to what the CPU has; "avx512" keeps
// AVX-512 and drops AMX (scripts/test runs this binary under each cap the CPU allows).
TEST(CpuFeatures, TheCapNeverExceedsTheCpu) {
  const CpuFeatures detected = detect_cpu_features();
  const CpuFeatures& f = cpu_features();
  EXPECT_LE(f.has_amx_kernels(), detected.has_amx_kernels());
  EXPECT_LE(f.has_avx512_kernels(), detected.has_avx512_kernels());
  EXPECT_LE(f.has_avx_vnni_kernels(), detected.has_avx_vnni_kernels());
  EXPECT_LE(f.has_avx2_kernels(), detected.has_avx2_kernels());
  const char* cap = std::getenv("TOKENMILL_ISA");
  if (cap == nullptr) {
    EXPECT_EQ(std::string(f.kernel_set()), detected.kernel_set());
  } else if (std::strcmp(cap, "avx512") == 0) {
    EXPECT_FALSE(f.has_amx_kernels());
    EXPECT_EQ(f.has_avx512_kernels(), detected.has_avx512_kernels());
  } else if (std::strcmp(cap, "avx2") == 0 || std::strcmp(cap, "avxvnni") == 0) {
    EXPECT_FALSE(f.has_avx512_kernels());
    EXPECT_FALSE(f.has_amx_kernels());
  } else if (std::strcmp(cap, "neon") == 0) {
    EXPECT_FALSE(f.dotprod);
    EXPECT_FALSE(f.i8mm);
    EXPECT_EQ(f.neon, detected.neon);
  } else if (std::strcmp(cap, "scalar") == 0) {
    EXPECT_STREQ(f.kernel_set(), "scalar");
  }
#if defined(__aarch64__)
  EXPECT_TRUE(detected.neon);  // part of the AArch64 base architecture
#else
  EXPECT_FALSE(detected.neon);
#endif
}

}  // namespace
}  // namespace tokenmill
