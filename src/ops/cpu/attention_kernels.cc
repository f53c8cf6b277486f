// The attention bodies of this target (attention_kernels.h). Each lives in a file
// compiled for its instruction set (cmake/layers.cmake), declared here only where built.
#include "ops/cpu/attention_kernels.h"

namespace tokenmill::ops::cpu {

#if defined(__x86_64__)
void attend_head_group_avx512(const HeadGroupAttention& a);  // attention_avx512.cc
void attend_head_group_avx2(const HeadGroupAttention& a);    // attention_avx2.cc
#elif defined(__aarch64__)
void attend_head_group_neon(const HeadGroupAttention& a);  // attention_neon.cc
#endif

std::vector<AttentionKernel> attention_kernels(const CpuFeatures& cpu) {
#if defined(__x86_64__)
  return {{"avx512", cpu.has_avx512_kernels(), attend_head_group_avx512},
          {"avx2", cpu.has_avx2_kernels(), attend_head_group_avx2}};
#elif defined(__aarch64__)
  return {{"neon", cpu.has_neon_kernels(), attend_head_group_neon}};
#else
  return {};
#endif
}

}  // namespace tokenmill::ops::cpu
