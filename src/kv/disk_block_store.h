// The disk tier of the prefix cache: KV blocks kept as files under a folder, found by
// their chained block hash, read back instead of recomputed.
//
//   DIR/                       --kv-disk
//     <model>-<layout>/        one folder per model file contents and cache layout
//       model                  the model key (its path) that owns the folder
//       <hash>.kvb             a block without its sliding-window part
//       <hash>w.kvb            a block with it (kv/disk_block_file.h has the format)
//
// The fingerprint covers the model file's contents and the cache layout (KV type, block
// size, layers, heads, which layers are windowed), so a block can only ever be read back
// into the configuration that wrote it; a folder of the same model key whose model part
// differs (the model file changed) is removed at start (one with another layout stays:
// the same model with another KV type may come back), and files whose write never
// finished (*.tmp, a process killed mid-write) too. The index (kv/disk_block_index.h)
// is rebuilt at start from the file names, sizes and modification times (the last use),
// and kept under max_bytes by deleting the least recently used blocks.
//
// One thread does all file work, reads before writes: a read is what a waiting request
// needs, a write only what a later one may. Writes go to a temporary name and are
// renamed into place once whole (no fsync: a block lost to a power cut is recomputed,
// and a damaged one fails its checksum). A failed write (a full disk) pauses spilling
// for kSpillPauseSeconds with a log line; nothing a request waits for depends on it.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "kv/disk_block_file.h"
#include "kv/disk_block_index.h"

namespace tokenmill::kv {

// What blocks belong to: a hash of the model file's contents and one of the cache layout.
struct DiskFingerprint {
  uint64_t model = 0;
  uint64_t layout = 0;
};

struct DiskStoreConfig {
  std::string dir;
  int64_t max_bytes = 0;
  std::string model_key;  // the model file's path: names whose stale folders to remove
  // The model and cache layout's fingerprint, computed on the store's thread before any
  // file is touched (hashing a model file takes a while; the server starts meanwhile).
  std::function<DiskFingerprint()> fingerprint;
};

// One block to read back: the file expected and where its payload goes.
struct DiskRead {
  DiskBlockHeader expected;  // everything but the fingerprint, which the store fills in
  bool need_window = false;
  // The payload's destination, in order: the base part's segments, then (need_window)
  // the window part's. Their sizes add up to the payload read.
  std::vector<std::span<uint8_t>> destinations;
};

// The reads of one sequence's prefix, done in order: a read that fails (file gone,
// damaged) ends the batch, so n_ok() reads from the first are in place.
class DiskLoad {
 public:
  explicit DiskLoad(std::vector<DiskRead> reads) : reads_(std::move(reads)) {}
  bool done() const { return done_.load(std::memory_order_acquire); }
  // REQUIRES: done()
  size_t n_ok() const { return n_ok_; }

 private:
  friend class DiskBlockStore;
  std::vector<DiskRead> reads_;
  size_t n_ok_ = 0;
  std::atomic<bool> done_{false};
};

struct DiskStoreCounters {
  uint64_t hits = 0;           // blocks read back
  uint64_t misses = 0;         // prefix lookups that went on to disk and found no block there
  uint64_t writes = 0;         // blocks written
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t corrupt = 0;        // files rejected (checksum, size, header) and deleted
  uint64_t dropped = 0;        // blocks not written: the queue full, the disk full
  int64_t usage_bytes = 0;
  int64_t n_blocks = 0;
  int64_t max_bytes = 0;
  int64_t stale_bytes_removed = 0;  // at start: the files of a previous version of the model
};

class DiskBlockStore {
 public:
  static constexpr double kSpillPauseSeconds = 30;
  static constexpr int64_t kMaxQueuedBytes = 256ll << 20;  // writes waiting in memory

  // Creates DIR and starts the store's thread (which computes the fingerprint, then
  // prepares the folder and the index). An error when DIR cannot be created.
  static Result<std::unique_ptr<DiskBlockStore>> open(DiskStoreConfig config);
  // Finishes the queued reads and writes, then stops the thread.
  ~DiskBlockStore();
  DiskBlockStore(const DiskBlockStore&) = delete;
  DiskBlockStore& operator=(const DiskBlockStore&) = delete;

  // The index is built; before, every lookup misses.
  bool ready() const { return ready_.load(std::memory_order_acquire); }
  void wait_ready() const;
  // DIR/<model>-<layout> (empty until ready).
  std::string folder() const;

  std::optional<DiskBlockInfo> find(uint64_t hash) const;
  // On disk or queued to be written (with the window part if with_window).
  bool holds(uint64_t hash, bool with_window) const;
  void count_miss() { misses_.fetch_add(1, std::memory_order_relaxed); }

  // Queues a block file to be written: begin_disk_block() plus the payload, unsealed
  // (the store sets the fingerprint and appends the checksums). False when it was
  // dropped: the queue is full or spilling is paused.
  bool spill(uint64_t hash, bool has_window, std::vector<uint8_t> file);
  // Queues reads; the returned load is done() once each is in place or the batch failed.
  std::shared_ptr<DiskLoad> read(std::vector<DiskRead> reads);
  // Waits until some load finishes or timeout passes.
  void wait_for_read(std::chrono::microseconds timeout);
  // Waits until nothing is queued (tests, shutdown).
  void flush();

  DiskStoreCounters counters() const;

 private:
  struct PendingWrite {
    uint64_t hash;
    bool has_window;
    std::vector<uint8_t> file;
  };

  explicit DiskBlockStore(DiskStoreConfig config);
  void run();
  void prepare();
  void write_block(PendingWrite& w);
  void read_blocks(DiskLoad& load);
  bool read_one(DiskRead& read);
  std::string path_of(uint64_t hash, bool has_window) const;
  void remove_files(const std::vector<DiskBlockIndex::Evicted>& evicted);

  DiskStoreConfig config_;
  std::atomic<bool> ready_{false};
  uint64_t fingerprint_ = 0;  // both parts of the DiskFingerprint in one; set before ready_
  std::string folder_;        // set before ready_

  mutable std::mutex mutex_;  // guards the fields below
  mutable std::condition_variable cv_;  // work queued, stop, ready, a load done, the queue drained
  DiskBlockIndex index_;
  std::deque<PendingWrite> writes_;
  std::unordered_set<uint64_t> queued_;  // hashes in writes_
  int64_t queued_bytes_ = 0;
  std::deque<std::shared_ptr<DiskLoad>> reads_;
  bool busy_ = false;  // the thread is working on something it took from the queues
  bool stop_ = false;
  double spill_paused_until_ = 0;  // seconds on the steady clock
  uint64_t loads_done_ = 0;
  int64_t stale_bytes_removed_ = 0;

  std::atomic<uint64_t> hits_{0}, misses_{0}, writes_done_{0}, bytes_read_{0}, bytes_written_{0}, corrupt_{0},
      dropped_{0};
  std::thread thread_;
};

}  // namespace tokenmill::kv
