// Whether a KV cache of some size fits in this machine's memory now, for the commands
// that build one. The cache is committed when it is made (ops::KvStorage), so a cache
// too large is refused up front, naming the flags that size it, instead of running
// into the kernel's out-of-memory killer.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "base/system_memory.h"

namespace tokenmill::cli {

inline Status check_kv_memory(int64_t kv_bytes, const std::string& sizing_flags) {
  const int64_t available = available_memory_bytes();
  if (available < 0 || kv_bytes <= available) return {};
  return invalid_argument("the KV cache needs " + std::to_string(kv_bytes >> 20) + " MiB but only " +
                          std::to_string(available >> 20) + " MiB of memory is available: lower " + sizing_flags);
}

}  // namespace tokenmill::cli
