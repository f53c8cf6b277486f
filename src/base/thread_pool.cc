#include "base/thread_pool.h"

#include <algorithm>
#include <cassert>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "base/cpu_affinity.h"

namespace tokenmill {

namespace {

// How long a worker polls for the next job before sleeping, and the caller for claimed
// parts to finish before yielding its core: on the order of 100 µs of pause instructions.
constexpr int kSpinIterations = 1 << 14;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// next_part of a job being set up: no part can be claimed.
constexpr uint32_t kClosed = 0xffffffffu;

constexpr uint64_t pack(uint32_t generation, uint32_t next_part) {
  return (static_cast<uint64_t>(generation) << 32) | next_part;
}
constexpr uint32_t generation_of(uint64_t state) { return static_cast<uint32_t>(state >> 32); }
constexpr uint32_t next_part_of(uint64_t state) { return static_cast<uint32_t>(state); }

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  regions_ = std::vector<RegionCursor>(static_cast<size_t>(n_threads_));
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

bool ThreadPool::pin_workers(std::span<const int> cpus) {
  if (cpus.size() < static_cast<size_t>(n_threads_)) return false;
  bool pinned = true;
  for (size_t k = 1; k < static_cast<size_t>(n_threads_); ++k) pinned &= pin_thread(workers_[k - 1], cpus.subspan(k, 1));
  return pinned;
}

ThreadPool::~ThreadPool() {
  stopping_.store(true);
  wake_.fetch_add(1);
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_parts(uint32_t generation) {
  uint64_t state = state_.load(std::memory_order_acquire);
  for (;;) {
    if (generation_of(state) != generation) return;
    const uint32_t part = next_part_of(state);
    // n_parts_ is read only while the job cannot have finished: `part` is unclaimed, so
    // n_done_ < n_parts_. A stale read of a finished job fails the exchange below.
    if (part >= n_parts_.load(std::memory_order_acquire)) return;
    if (state_.compare_exchange_weak(state, pack(generation, part + 1), std::memory_order_acquire)) {
      (*job_)(static_cast<int>(part));
      n_done_.fetch_add(1, std::memory_order_release);
      state = state_.load(std::memory_order_acquire);
    }
  }
}

void ThreadPool::worker_loop() {
  uint32_t seen_wake = 0;
  for (;;) {
    uint32_t wake = wake_.load(std::memory_order_acquire);
    for (int spin = 0; wake == seen_wake && spin < kSpinIterations; ++spin) {
      cpu_relax();
      wake = wake_.load(std::memory_order_acquire);
    }
    if (wake == seen_wake) {
      // Sleep. seq_cst on n_sleeping_ and wake_ (here and in run_on_all) means either
      // this worker sees the new job or the publisher sees it sleeping and notifies.
      n_sleeping_.fetch_add(1);
      wake_.wait(seen_wake);
      n_sleeping_.fetch_sub(1);
      continue;
    }
    seen_wake = wake;
    if (stopping_.load()) return;
    run_parts(generation_of(state_.load(std::memory_order_acquire)));
  }
}

void ThreadPool::run_job(uint32_t n_parts, const std::function<void(int)>& fn) {
  const uint32_t generation = generation_of(state_.load(std::memory_order_relaxed)) + 1;
  // Close the previous job before touching its fields. A worker that finished that job's
  // last part may still hold its state (generation - 1, n_parts) and be about to read
  // n_parts_: were the new, larger count visible while that state could still be
  // swapped, it would claim a part of the new job under the old generation, run it twice
  // and count it twice (seen as a hang: n_done_ past n_parts forever, when a 16-part
  // sampling job followed 8-chunk matmuls). With the generation bumped first, its
  // exchange fails; the release on n_parts_ makes the bump visible to whoever reads the
  // new count (acquire in run_parts).
  state_.store(pack(generation, kClosed), std::memory_order_relaxed);
  job_ = &fn;
  n_parts_.store(n_parts, std::memory_order_release);
  n_done_.store(0, std::memory_order_relaxed);
  state_.store(pack(generation, 1), std::memory_order_release);  // part 0 is ours
  wake_.fetch_add(1);                                             // seq_cst
  if (n_sleeping_.load() > 0) wake_.notify_all();
  fn(0);
  n_done_.fetch_add(1, std::memory_order_relaxed);
  run_parts(generation);  // parts no worker has claimed yet
  for (int spin = 0; n_done_.load(std::memory_order_acquire) != n_parts; ++spin) {
    if (spin < kSpinIterations) {
      cpu_relax();
    } else {
      std::this_thread::yield();  // a worker was preempted inside its part
    }
  }
}

void ThreadPool::run_on_all(const std::function<void(int)>& fn) {
  if (n_threads_ == 1) {
    fn(0);
    return;
  }
  run_job(static_cast<uint32_t>(n_threads_), fn);
}

void ThreadPool::parallel_chunks(size_t n_chunks, const std::function<void(size_t)>& fn) {
  if (n_chunks == 0) return;
  if (n_threads_ == 1 || n_chunks == 1) {
    for (size_t c = 0; c < n_chunks; ++c) fn(c);
    return;
  }
  run_job(static_cast<uint32_t>(n_chunks), [&](int chunk) { fn(static_cast<size_t>(chunk)); });
}

namespace {

constexpr uint64_t pack_range(uint32_t front, uint32_t back) { return static_cast<uint64_t>(back) << 32 | front; }
constexpr uint32_t front_of(uint64_t bounds) { return static_cast<uint32_t>(bounds); }
constexpr uint32_t back_of(uint64_t bounds) { return static_cast<uint32_t>(bounds >> 32); }

}  // namespace

void ThreadPool::parallel_ranges(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  grain = std::max<size_t>(grain, 1);
  if (n_threads_ == 1 || n <= grain) {
    for (size_t begin = 0; begin < n; begin += grain) fn(begin, std::min(n, begin + grain));
    return;
  }
  assert(n <= UINT32_MAX);
  const int n_regions = n_threads_;
  for (int r = 0; r < n_regions; ++r) {
    const size_t begin = n * r / n_regions;
    const size_t end = n * (r + 1) / n_regions;
    regions_[r].bounds.store(pack_range(static_cast<uint32_t>(begin), static_cast<uint32_t>(end)),
                             std::memory_order_relaxed);
  }
  run_on_all([&](int part) {
    // Own region, front to back.
    std::atomic<uint64_t>& own = regions_[part].bounds;
    for (uint64_t b = own.load(std::memory_order_relaxed);;) {
      const uint32_t front = front_of(b), back = back_of(b);
      if (front >= back) break;
      const uint32_t next = static_cast<uint32_t>(std::min<size_t>(front + grain, back));
      if (own.compare_exchange_weak(b, pack_range(next, back), std::memory_order_relaxed)) {
        fn(front, next);
        b = own.load(std::memory_order_relaxed);
      }
    }
    // Then the others', back to front.
    for (int i = 1; i < n_regions; ++i) {
      std::atomic<uint64_t>& other = regions_[(part + i) % n_regions].bounds;
      for (uint64_t b = other.load(std::memory_order_relaxed);;) {
        const uint32_t front = front_of(b), back = back_of(b);
        if (front >= back) break;
        const uint32_t next = static_cast<uint32_t>(back - std::min<size_t>(grain, back - front));
        if (other.compare_exchange_weak(b, pack_range(front, next), std::memory_order_relaxed)) {
          fn(next, back);
          b = other.load(std::memory_order_relaxed);
        }
      }
    }
  });
}

void ThreadPool::parallel_for(size_t n, const std::function<void(int, size_t, size_t)>& fn) {
  if (n == 0) return;
  const size_t n_parts = std::min<size_t>(n_threads_, n);
  if (n_parts == 1) {
    fn(0, 0, n);
    return;
  }
  run_on_all([&](int t) {
    if (static_cast<size_t>(t) >= n_parts) return;
    const size_t begin = n * t / n_parts;
    const size_t end = n * (t + 1) / n_parts;
    fn(t, begin, end);
  });
}

int default_thread_count() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace tokenmill
