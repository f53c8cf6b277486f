// A persistent pool of worker threads for data-parallel loops inside one forward pass.
// Threads are created once; parallel_for wakes them, the caller's thread takes a share of
// the work too, and the call returns when every index has run.
//
// A decode step is ~250 small parallel loops of 10-100 µs each, so waking a worker must
// cost far less than a futex round trip. Workers therefore spin on an atomic job word
// for a while after each job (kSpinIterations pause instructions, ~100 µs) and only then
// sleep in the kernel. Between forward passes they fall asleep and use no CPU.
//
// A job is n_threads parts. Parts are claimed, not assigned: the caller runs the first,
// then claims any part no worker has started yet. So a worker that the OS has not
// scheduled (more threads than free cores) delays nothing, and part p is still run by
// exactly one thread, which makes the part index safe to use for per-thread scratch.
//
// Thread-safety: one parallel_for / run_on_all at a time per pool (the engine thread
// owns the pool); fn must not call back into the same pool.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <thread>
#include <vector>

namespace tokenmill {

class ThreadPool {
 public:
  // n_threads counts the calling thread: 1 means no workers, everything inline.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }

  // Pins worker k (k = 1 .. n_threads - 1) to cpus[k], leaving cpus[0] to the calling
  // thread, which pins itself. False if cpus is too short or the OS refused.
  bool pin_workers(std::span<const int> cpus);

  // Runs fn(part, begin, end) over [0, n) split into min(n, n_threads) contiguous
  // ranges, part = 0, 1, ... in order of the ranges. Each part runs once, on one thread
  // (which thread is not fixed). Returns after all parts have run.
  void parallel_for(size_t n, const std::function<void(int, size_t, size_t)>& fn);

  // Runs fn(part) once for every part in [0, n_threads), as parallel_for.
  void run_on_all(const std::function<void(int)>& fn);

  // Runs fn(chunk) once for every chunk in [0, n_chunks), chunks claimed one at a time
  // by whichever thread is free: a thread the OS slows down (a busy machine) takes fewer
  // chunks instead of holding everyone back. Chunk numbers are not thread indices.
  void parallel_chunks(size_t n_chunks, const std::function<void(size_t)>& fn);

  // Runs fn(begin, end) over [0, n) in pieces of at most `grain` items. Each thread owns
  // one contiguous region (n / n_threads items) and walks it front to back; a thread
  // done with its own region takes pieces from the back of another's. Streaming
  // kernels keep their memory streams going from one piece to the next this way (the
  // chunks of parallel_chunks go round-robin, so each one started cold: a 16-sequence
  // decode step ran 12% faster with one chunk per thread), while a thread the OS slows
  // down still hands the end of its region to the others.
  void parallel_ranges(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn);

 private:
  void worker_loop();
  // Publishes fn as a job of n_parts parts, runs parts until none is left unclaimed and
  // waits for the rest. REQUIRES: n_parts >= 1.
  void run_job(uint32_t n_parts, const std::function<void(int)>& fn);
  // Claims and runs parts of the job published as `generation` until none is left.
  void run_parts(uint32_t generation);

  int n_threads_;
  std::vector<std::thread> workers_;
  // The job word: generation (high 32 bits) | next unclaimed part (low 32 bits). A job is
  // published by storing the word with a new generation and no claimable part (closing
  // the previous job), then job_, n_parts_ and n_done_, then the word with part 1 (part 0
  // is the caller's). A part is claimed by a compare-exchange that keeps the generation,
  // so a late worker can never claim a part of a later job; once
  // it holds a claimed part, job_ stays valid until that part is counted in n_done_.
  std::atomic<uint64_t> state_{0};
  const std::function<void(int)>* job_ = nullptr;
  std::atomic<uint32_t> n_parts_{0};  // release/acquire: orders the closing of the previous job
  std::atomic<uint32_t> n_done_{0};
  std::atomic<uint32_t> wake_{0};   // bumped with every job; sleepers wait on it
  std::atomic<int> n_sleeping_{0};  // workers blocked in wake_.wait(): notify only then
  std::atomic<bool> stopping_{false};
  // parallel_ranges: per thread region, front (low 32 bits) and back (high 32 bits) of
  // what is left of it, each on its own cache line.
  struct alignas(64) RegionCursor {
    std::atomic<uint64_t> bounds{0};
  };
  std::vector<RegionCursor> regions_;
};

// Default thread count: the number of online CPUs.
int default_thread_count();

}  // namespace tokenmill
