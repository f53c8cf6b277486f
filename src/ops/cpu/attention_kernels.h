// The inner loop of CPU attention: one query token, the query heads that share one kv
// head, against that kv head's cached keys and values (F16, or Q8_0 blocks, which are
// dequantized exactly - scale times code is exact in float - and then used as F16 is). CpuBackend::attention cuts
// a batch into such items and runs them in parallel.
//
// Every path computes each (head, key) score and each output element with the same
// operations in the same order however the heads are grouped, so a token's result does
// not depend on the other tokens or heads in its batch.
#pragma once

#include <cstdint>
#include <vector>

#include "base/cpu_features.h"
#include "ops/kv_type.h"

namespace tokenmill::ops::cpu {

struct HeadGroupAttention {
  const float* q = nullptr;           // [n_heads, head_dim] this token's query rows (float)
  int32_t n_heads = 0;                // query heads in the group (they share keys/values)
  int32_t head_dim = 0;
  const uint8_t* const* keys = nullptr;    // [n_keys] key rows of the kv head, in position order
  const uint8_t* const* values = nullptr;  // [n_keys] value rows, same positions
  KvType kv_type = KvType::kF16;           // how the rows are stored (kv_storage.h)
  int32_t n_keys = 0;                 // >= 1
  float scale = 1.0f;                 // applied to q·k before the softcap and softmax
  float softcap = 0.0f;               // 0: off; else s = softcap * tanh(s / softcap)
  const float* sinks = nullptr;       // [n_heads] the group's sink logits (AttentionParams), or null
  float* out = nullptr;               // [n_heads, head_dim]
  float* scratch_q = nullptr;         // [n_heads * head_dim]
  float* scratch_scores = nullptr;    // [n_heads * n_keys]
};

// The reference: as ggml computes it (q and the probabilities rounded to F16 as they meet
// the F16 cache), one scalar loop at a time.
void attend_head_group_ref(const HeadGroupAttention& a);

// One vector body of the kernel (attention_simd-inl.h) compiled into this build: AVX-512
// (16 floats), AVX2 (8) on x86-64, NEON (4) on arm64. Every body gives the same bits.
struct AttentionKernel {
  const char* isa;  // "avx512", "avx2", "neon"
  bool runs_here;   // the CPU has what it needs
  void (*attend)(const HeadGroupAttention& a);  // REQUIRES: runs_here, head_dim % 16 == 0
};

// The bodies compiled for this target, widest first, each marked for the features given
// (detected ones for tests; cpu_features(), which TOKENMILL_ISA caps, for the backend).
// Empty where the target has none (the reference runs then).
std::vector<AttentionKernel> attention_kernels(const CpuFeatures& cpu);

// dst[i] = f32_to_f16(src[i]) for n values, with F16C (bit-identical to base/half.h for
// finite values).  REQUIRES: CpuFeatures::has_avx2_kernels().
void convert_to_f16_avx2(const float* src, uint16_t* dst, int64_t n);

}  // namespace tokenmill::ops::cpu
