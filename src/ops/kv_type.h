// How a KV cache stores its rows (kv_storage.h): F16 values, or Q8_0 blocks of 32 values
// (one F16 scale and 32 int8 codes: 34 bytes for 32 values, about half of F16).
//
// Constants and an enum only: the AVX-512 attention kernels include this, and an inline
// function defined here could be merged into other files compiled without AVX-512.
#pragma once

#include <cstdint>

namespace tokenmill::ops {

enum class KvType { kF16, kQ8_0 };

constexpr int32_t kKvQ8Block = 32;       // values per Q8_0 block
constexpr int32_t kKvQ8BlockBytes = 34;  // F16 scale + 32 int8 codes

}  // namespace tokenmill::ops
