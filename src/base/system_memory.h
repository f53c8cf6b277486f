// How much memory the machine can still give this process.
#pragma once

#include <cstdint>

namespace tokenmill {

// The kernel's estimate of memory available for new allocations without swapping
// (MemAvailable in /proc/meminfo), in bytes; -1 where it cannot be read.
int64_t available_memory_bytes();

}  // namespace tokenmill
