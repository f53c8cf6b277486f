#include "base/large_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <new>

namespace tokenmill {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

}  // namespace

std::shared_ptr<uint8_t[]> allocate_large_buffer(size_t n, Commit commit) {
  if (n == 0) n = 1;
  // Over-map by one huge page and start at the first 2 MiB boundary inside, so that
  // every whole huge page of the buffer can be backed by one.
  const size_t mapped = n + kHugePage;
  void* base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) throw std::bad_alloc();
  const auto start = (reinterpret_cast<uintptr_t>(base) + kHugePage - 1) & ~(kHugePage - 1);
  auto* data = reinterpret_cast<uint8_t*>(start);
#ifdef MADV_HUGEPAGE
  madvise(data, (n + kHugePage - 1) & ~(kHugePage - 1), MADV_HUGEPAGE);  // a hint: failure is harmless
#endif
  std::shared_ptr<uint8_t[]> buffer(data, [base, mapped](uint8_t*) { munmap(base, mapped); });
  if (commit == Commit::kNow) {
    bool populated = false;
#ifdef MADV_POPULATE_WRITE
    // Faults every page in (zeroed) without writing it from here; Linux 5.14 and later.
    // ENOMEM: the memory is not there.
    if (madvise(data, n, MADV_POPULATE_WRITE) == 0) {
      populated = true;
    } else if (errno == ENOMEM) {
      throw std::bad_alloc();
    }
#endif
    if (!populated) std::memset(data, 0, n);  // older kernels: one write per page does it
  }
  return buffer;
}

}  // namespace tokenmill
