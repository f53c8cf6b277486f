#include "kv/disk_block_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <xxhash.h>

#include "base/durable_file.h"
#include "base/log.h"

namespace tokenmill::kv {

namespace fs = std::filesystem;

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string hex16(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016" PRIx64, value);
  return text;
}

// "<16 hex>.kvb" or "<16 hex>w.kvb": the hash and whether the window part is there.
bool parse_block_name(const std::string& name, uint64_t& hash, bool& has_window) {
  if (name.size() != 20 && name.size() != 21) return false;
  if (name.compare(name.size() - 4, 4, ".kvb") != 0) return false;
  has_window = name.size() == 21;
  if (has_window && name[16] != 'w') return false;
  hash = 0;
  for (int i = 0; i < 16; ++i) {
    const char c = name[static_cast<size_t>(i)];
    int digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else return false;
    hash = hash << 4 | static_cast<uint64_t>(digit);
  }
  return true;
}

std::string read_small_file(const fs::path& path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  return text;
}

// Writes all of bytes to a new file at path; false (errno kept) on any failure.
bool write_whole_file(const std::string& path, std::span<const uint8_t> bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int saved = errno == 0 ? ENOSPC : errno;
      ::close(fd);
      errno = saved;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return ::close(fd) == 0;
}

// n bytes at offset, or false when the file is shorter or unreadable.
bool read_at(int fd, uint8_t* out, size_t n, uint64_t offset) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<size_t>(got);
  }
  return true;
}

// The parts of a block file a read needs: its first bytes up to the base part's end (and
// the window part with need_window), and its trailer. nullopt when it cannot be opened;
// an error when it is damaged.
struct BlockFileBytes {
  std::vector<uint8_t> leading;
  std::array<uint8_t, kDiskBlockTrailerBytes> trailer{};
};
std::optional<Result<BlockFileBytes>> read_block_file(const std::string& path, bool need_window) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  auto result = [&]() -> Result<BlockFileBytes> {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return io_error("cannot stat the KV block file");
    const auto size = static_cast<uint64_t>(st.st_size);
    uint8_t fixed[kDiskBlockFixedHeaderBytes];
    if (size < sizeof fixed || !read_at(fd, fixed, sizeof fixed, 0)) {
      return corrupt_data("KV block file of " + std::to_string(size) + " bytes is shorter than its header");
    }
    auto extent = disk_block_extent(fixed, size);
    if (!extent.ok()) return extent.status();
    BlockFileBytes bytes;
    bytes.leading.resize(extent->base_end() + (need_window ? extent->window_bytes : 0));
    if (!read_at(fd, bytes.leading.data(), bytes.leading.size(), 0) ||
        !read_at(fd, bytes.trailer.data(), bytes.trailer.size(), size - kDiskBlockTrailerBytes)) {
      return corrupt_data("KV block file could not be read whole");
    }
    return bytes;
  }();
  ::close(fd);
  return result;
}

}  // namespace

Result<std::unique_ptr<DiskBlockStore>> DiskBlockStore::open(DiskStoreConfig config) {
  std::error_code error;
  fs::create_directories(config.dir, error);
  if (error || !fs::is_directory(config.dir)) {
    return io_error("cannot create the KV disk folder '" + config.dir + "': " + error.message());
  }
  if (config.max_bytes <= 0) return invalid_argument("the KV disk tier needs a size above 0");
  return std::unique_ptr<DiskBlockStore>(new DiskBlockStore(std::move(config)));
}

DiskBlockStore::DiskBlockStore(DiskStoreConfig config) : config_(std::move(config)), index_(config_.max_bytes) {
  thread_ = std::thread([this] { run(); });
}

DiskBlockStore::~DiskBlockStore() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void DiskBlockStore::wait_ready() const {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return ready(); });
}

std::string DiskBlockStore::folder() const { return ready() ? folder_ : std::string(); }

std::string DiskBlockStore::path_of(uint64_t hash, bool has_window) const {
  return folder_ + "/" + hex16(hash) + (has_window ? "w.kvb" : ".kvb");
}

std::optional<DiskBlockInfo> DiskBlockStore::find(uint64_t hash) const {
  if (!ready()) return std::nullopt;
  std::lock_guard<std::mutex> lock(mutex_);
  return index_.find(hash);
}

bool DiskBlockStore::holds(uint64_t hash, bool with_window) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (queued_.count(hash)) return true;
  const auto info = index_.find(hash);
  return info && (info->has_window || !with_window);
}

bool DiskBlockStore::spill(uint64_t hash, bool has_window, std::vector<uint8_t> file) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto size = static_cast<int64_t>(file.size());
  if (queued_.count(hash)) return true;  // already on its way
  if (now_seconds() < spill_paused_until_ || queued_bytes_ + size > kMaxQueuedBytes) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  queued_.insert(hash);
  queued_bytes_ += size;
  writes_.push_back({hash, has_window, std::move(file)});
  cv_.notify_all();
  return true;
}

std::shared_ptr<DiskLoad> DiskBlockStore::read(std::vector<DiskRead> reads) {
  auto load = std::make_shared<DiskLoad>(std::move(reads));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    reads_.push_back(load);
  }
  cv_.notify_all();
  return load;
}

void DiskBlockStore::wait_for_read(std::chrono::microseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t seen = loads_done_;
  cv_.wait_for(lock, timeout, [&] { return loads_done_ != seen || reads_.empty(); });
}

void DiskBlockStore::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return ready() && reads_.empty() && writes_.empty() && !busy_; });
}

DiskStoreCounters DiskBlockStore::counters() const {
  DiskStoreCounters c;
  c.hits = hits_.load(std::memory_order_relaxed);
  c.misses = misses_.load(std::memory_order_relaxed);
  c.writes = writes_done_.load(std::memory_order_relaxed);
  c.bytes_read = bytes_read_.load(std::memory_order_relaxed);
  c.bytes_written = bytes_written_.load(std::memory_order_relaxed);
  c.corrupt = corrupt_.load(std::memory_order_relaxed);
  c.dropped = dropped_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  c.usage_bytes = index_.used_bytes();
  c.n_blocks = index_.n_blocks();
  c.max_bytes = index_.max_bytes();
  c.stale_bytes_removed = stale_bytes_removed_;
  return c;
}

void DiskBlockStore::run() {
  prepare();
  std::unique_lock<std::mutex> lock(mutex_);
  ready_.store(true, std::memory_order_release);
  cv_.notify_all();
  for (;;) {
    busy_ = false;
    cv_.notify_all();
    cv_.wait(lock, [&] { return stop_ || !reads_.empty() || !writes_.empty(); });
    busy_ = true;
    if (!reads_.empty()) {
      std::shared_ptr<DiskLoad> load = std::move(reads_.front());
      reads_.pop_front();
      lock.unlock();
      read_blocks(*load);
      lock.lock();
      ++loads_done_;
      continue;
    }
    if (!writes_.empty()) {
      PendingWrite w = std::move(writes_.front());
      writes_.pop_front();
      lock.unlock();
      write_block(w);
      lock.lock();
      queued_.erase(w.hash);
      queued_bytes_ -= static_cast<int64_t>(w.file.size());
      continue;
    }
    if (stop_) break;
  }
  busy_ = false;
}

// Computes the fingerprint, removes stale folders of the same model and unfinished
// files, and rebuilds the index from the block files, oldest use first.
void DiskBlockStore::prepare() {
  const DiskFingerprint fingerprint = config_.fingerprint ? config_.fingerprint() : DiskFingerprint{};
  const uint64_t parts[2] = {fingerprint.model, fingerprint.layout};
  fingerprint_ = XXH3_64bits(parts, sizeof parts);
  const std::string model_part = hex16(fingerprint.model);
  const std::string name = model_part + "-" + hex16(fingerprint.layout);
  folder_ = (fs::path(config_.dir) / name).string();
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(config_.dir, error)) {
    const std::string other = entry.path().filename().string();
    if (!entry.is_directory() || other.compare(0, model_part.size(), model_part) == 0) continue;
    if (read_small_file(entry.path() / "model") != config_.model_key) continue;
    int64_t bytes = 0;
    for (const auto& file : fs::directory_iterator(entry.path(), error)) {
      bytes += static_cast<int64_t>(file.is_regular_file(error) ? file.file_size(error) : 0);
    }
    fs::remove_all(entry.path(), error);
    std::lock_guard<std::mutex> lock(mutex_);
    stale_bytes_removed_ += bytes;
  }
  fs::create_directories(folder_, error);
  if (Status s = write_file_durably((fs::path(folder_) / "model").string(), config_.model_key + "\n"); !s.ok()) {
    log_warn("KV disk tier: " + s.message());
  }
  struct Found {
    uint64_t hash;
    DiskBlockInfo info;
    fs::file_time_type used;
  };
  std::vector<Found> found;
  for (const auto& entry : fs::directory_iterator(folder_, error)) {
    const std::string file = entry.path().filename().string();
    if (file.size() > 4 && file.compare(file.size() - 4, 4, ".tmp") == 0) {
      fs::remove(entry.path(), error);  // a write a killed process never finished
      continue;
    }
    uint64_t hash;
    bool has_window;
    if (!parse_block_name(file, hash, has_window)) continue;
    std::error_code e1, e2;
    const auto size = entry.file_size(e1);
    const auto used = entry.last_write_time(e2);
    if (e1 || e2) continue;
    found.push_back({hash, {static_cast<int64_t>(size), has_window}, used});
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.used < b.used; });
  std::vector<DiskBlockIndex::Evicted> evicted;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Found& f : found) {
    auto existing = index_.find(f.hash);
    if (existing) {  // both variants on disk: keep the one with the window part
      const bool keep_new = f.info.has_window && !existing->has_window;
      evicted.push_back({f.hash, keep_new ? *existing : f.info});
      if (!keep_new) continue;
      index_.erase(f.hash);
    }
    auto out = index_.insert(f.hash, f.info);
    evicted.insert(evicted.end(), out.begin(), out.end());
  }
  remove_files(evicted);
}

void DiskBlockStore::remove_files(const std::vector<DiskBlockIndex::Evicted>& evicted) {
  for (const auto& e : evicted) ::unlink(path_of(e.hash, e.info.has_window).c_str());
}

void DiskBlockStore::write_block(PendingWrite& w) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto existing = index_.find(w.hash);
    if (existing && (existing->has_window || !w.has_window)) return;  // nothing new
  }
  if (w.file.size() < kDiskBlockFixedHeaderBytes) return;
  std::memcpy(w.file.data() + 8, &fingerprint_, sizeof fingerprint_);
  seal_disk_block(w.file);
  const std::string final_path = path_of(w.hash, w.has_window);
  const std::string temp_path = final_path + ".tmp";
  if (!write_whole_file(temp_path, w.file) || ::rename(temp_path.c_str(), final_path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temp_path.c_str());
    dropped_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(mutex_);
    if (now_seconds() >= spill_paused_until_) {
      log_warn("KV disk tier: cannot write a block (" + reason + "); spilling paused for " +
               std::to_string(static_cast<int>(kSpillPauseSeconds)) + " s");
    }
    spill_paused_until_ = now_seconds() + kSpillPauseSeconds;
    return;
  }
  writes_done_.fetch_add(1, std::memory_order_relaxed);
  bytes_written_.fetch_add(w.file.size(), std::memory_order_relaxed);
  std::vector<DiskBlockIndex::Evicted> evicted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto old = index_.find(w.hash); old && old->has_window != w.has_window) evicted.push_back({w.hash, *old});
    auto out = index_.insert(w.hash, {static_cast<int64_t>(w.file.size()), w.has_window});
    evicted.insert(evicted.end(), out.begin(), out.end());
  }
  remove_files(evicted);
}

void DiskBlockStore::read_blocks(DiskLoad& load) {
  size_t n_ok = 0;
  for (DiskRead& r : load.reads_) {
    if (!read_one(r)) break;
    ++n_ok;
  }
  load.n_ok_ = n_ok;
  load.done_.store(true, std::memory_order_release);
}

bool DiskBlockStore::read_one(DiskRead& r) {
  std::optional<DiskBlockInfo> info;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    info = index_.find(r.expected.hash);
  }
  if (!info || (r.need_window && !info->has_window)) return false;
  const std::string path = path_of(r.expected.hash, info->has_window);
  auto forget = [&] {
    ::unlink(path.c_str());
    std::lock_guard<std::mutex> lock(mutex_);
    index_.erase(r.expected.hash);
  };
  auto bytes = read_block_file(path, r.need_window);
  if (!bytes) {
    forget();  // gone (another process' eviction, a cleanup by hand): a miss from now on
    return false;
  }
  DiskBlockHeader expected = r.expected;
  expected.fingerprint = fingerprint_;
  Result<std::span<const uint8_t>> payload =
      bytes->ok() ? open_disk_block((*bytes)->leading, (*bytes)->trailer, expected, r.need_window)
                  : Result<std::span<const uint8_t>>(bytes->status());
  size_t wanted = 0;
  for (const auto& d : r.destinations) wanted += d.size();
  if (!payload.ok() || payload->size() != wanted) {
    corrupt_.fetch_add(1, std::memory_order_relaxed);
    log_warn("KV disk tier: skipped " + path + ": " +
             (payload.ok() ? std::string("its payload has another size") : payload.status().message()));
    forget();
    return false;
  }
  size_t at = 0;
  for (const auto& d : r.destinations) {
    std::memcpy(d.data(), payload->data() + at, d.size());
    at += d.size();
  }
  hits_.fetch_add(1, std::memory_order_relaxed);
  bytes_read_.fetch_add((*bytes)->leading.size() + kDiskBlockTrailerBytes, std::memory_order_relaxed);
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // the last use, for the order after a restart
  std::lock_guard<std::mutex> lock(mutex_);
  index_.touch(r.expected.hash);
  return true;
}

}  // namespace tokenmill::kv
