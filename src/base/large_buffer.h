// Large, long-lived buffers (weights repacked at load) in anonymous memory that asks the
// kernel for transparent huge pages: streaming hundreds of MB per token through 4 KiB
// pages costs a TLB miss every 4 KiB and stops the hardware prefetcher at every page
// boundary. Where huge pages are unavailable the memory is ordinary pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace tokenmill {

// n bytes (uninitialized), 2 MiB-aligned; freed when the last owner drops it.
// Throws std::bad_alloc if the memory cannot be mapped.
std::shared_ptr<uint8_t[]> allocate_large_buffer(size_t n);

}  // namespace tokenmill
