// Large, long-lived buffers (weights repacked at load) in anonymous memory that asks the
// kernel for transparent huge pages: streaming hundreds of MB per token through 4 KiB
// pages costs a TLB miss every 4 KiB and stops the hardware prefetcher at every page
// boundary. Where huge pages are unavailable the memory is ordinary pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace tokenmill {

// Whether a buffer's pages are faulted in when it is made or on first touch.
enum class Commit {
  kOnTouch,  // pages appear as they are first written (weights repacked at load)
  kNow,      // every page mapped and zeroed up front (the KV cache: a fault per 2 MiB
             // page taken while serving stalls a whole decode step)
};

// n bytes, 2 MiB-aligned, reading as zeros until written; freed when the last owner
// drops it. Throws std::bad_alloc if the memory cannot be mapped (with Commit::kNow: or
// committed).
std::shared_ptr<uint8_t[]> allocate_large_buffer(size_t n, Commit commit = Commit::kOnTouch);

}  // namespace tokenmill
