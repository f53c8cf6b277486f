#include "quant/kernels/scratch.h"

#include <cstdlib>
#include <new>

namespace tokenmill::quant {

namespace {

struct ThreadScratch {
  void* buffers[static_cast<int>(ScratchSlot::kCount)] = {};
  size_t sizes[static_cast<int>(ScratchSlot::kCount)] = {};
  ThreadScratch() = default;
  ThreadScratch(const ThreadScratch&) = delete;
  ThreadScratch& operator=(const ThreadScratch&) = delete;
  ~ThreadScratch() {
    for (void* b : buffers) std::free(b);
  }
};

}  // namespace

void* thread_scratch(ScratchSlot slot, size_t bytes) {
  thread_local ThreadScratch scratch;
  const int i = static_cast<int>(slot);
  if (scratch.sizes[i] < bytes) {
    std::free(scratch.buffers[i]);
    // Rounded up (aligned_alloc wants a multiple of the alignment) with room to grow.
    const size_t size = (bytes + bytes / 4 + 63) / 64 * 64;
    scratch.buffers[i] = std::aligned_alloc(64, size);
    if (scratch.buffers[i] == nullptr) throw std::bad_alloc();
    scratch.sizes[i] = size;
  }
  return scratch.buffers[i];
}

}  // namespace tokenmill::quant
