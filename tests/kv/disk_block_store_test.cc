#include "kv/disk_block_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace tokenmill::kv {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kBase = 64;
constexpr int64_t kWindow = 32;

struct TempDir {
  TempDir() {
    char name[] = "/tmp/tokenmill-kv-disk-XXXXXX";
    path = mkdtemp(name);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string path;
};

std::unique_ptr<DiskBlockStore> open_store(const std::string& dir, uint64_t model, int64_t max_bytes = 1 << 20,
                                           const std::string& key = "/models/a.gguf", uint64_t layout = 1) {
  auto store = DiskBlockStore::open({dir, max_bytes, key, [model, layout] { return DiskFingerprint{model, layout}; }});
  EXPECT_TRUE(store.ok()) << store.status().message();
  (*store)->wait_ready();
  return std::move(store).value();
}

DiskBlockHeader header_of(uint64_t hash, bool has_window) {
  DiskBlockHeader h;
  h.hash = hash;
  h.parent_hash = hash - 1;
  h.tokens = {static_cast<int32_t>(hash), 1, 2, 3};
  h.has_window = has_window;
  h.base_bytes = kBase;
  h.window_bytes = kWindow;
  return h;
}

// A block whose payload bytes are all `fill`.
void spill(DiskBlockStore& store, uint64_t hash, bool has_window, uint8_t fill) {
  const DiskBlockHeader h = header_of(hash, has_window);
  std::vector<uint8_t> file = begin_disk_block(h);
  file.insert(file.end(), static_cast<size_t>(kBase + (has_window ? kWindow : 0)), fill);
  EXPECT_TRUE(store.spill(hash, has_window, std::move(file)));
}

// Reads blocks back into fresh buffers; the returned buffers hold what was read.
std::pair<size_t, std::vector<std::vector<uint8_t>>> read_back(DiskBlockStore& store, std::vector<uint64_t> hashes,
                                                               bool need_window) {
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<DiskRead> reads;
  for (size_t i = 0; i < hashes.size(); ++i) buffers.emplace_back(static_cast<size_t>(kBase + (need_window ? kWindow : 0)), 0);
  for (size_t i = 0; i < hashes.size(); ++i) {
    DiskRead r;
    r.expected = header_of(hashes[i], need_window);
    r.need_window = need_window;
    r.destinations = {std::span<uint8_t>(buffers[i])};
    reads.push_back(std::move(r));
  }
  auto load = store.read(std::move(reads));
  store.flush();
  EXPECT_TRUE(load->done());
  return {load->n_ok(), std::move(buffers)};
}

TEST(DiskBlockStore, BlocksWrittenAreReadBackAndSurviveAReopen) {
  TempDir dir;
  {
    auto store = open_store(dir.path, 0x77);
    spill(*store, 10, true, 0xaa);
    spill(*store, 11, false, 0xbb);
    store->flush();
    EXPECT_EQ(store->counters().writes, 2u);
    EXPECT_TRUE(store->holds(10, true));
    EXPECT_TRUE(store->holds(11, false));
    EXPECT_FALSE(store->holds(11, true));
    auto [n_ok, buffers] = read_back(*store, {10, 11}, false);
    EXPECT_EQ(n_ok, 2u);
    EXPECT_EQ(buffers[0][0], 0xaa);
    EXPECT_EQ(buffers[1][kBase - 1], 0xbb);
  }
  auto store = open_store(dir.path, 0x77);
  EXPECT_EQ(store->counters().n_blocks, 2);
  ASSERT_TRUE(store->find(10));
  EXPECT_TRUE(store->find(10)->has_window);
  auto [n_ok, buffers] = read_back(*store, {10}, true);
  EXPECT_EQ(n_ok, 1u);
  EXPECT_EQ(buffers[0][kBase + kWindow - 1], 0xaa);
  EXPECT_EQ(store->counters().hits, 1u);
}

TEST(DiskBlockStore, AReadStopsAtTheFirstMissingOrWindowlessBlock) {
  TempDir dir;
  auto store = open_store(dir.path, 1);
  spill(*store, 20, true, 1);
  spill(*store, 21, false, 2);
  spill(*store, 22, true, 3);
  store->flush();
  EXPECT_EQ(read_back(*store, {20, 21, 22}, true).first, 1u);  // 21 lacks its window part
  EXPECT_EQ(read_back(*store, {20, 99, 22}, false).first, 1u);  // 99 was never written
}

TEST(DiskBlockStore, ADamagedOrTruncatedFileIsSkippedCountedAndDeleted) {
  TempDir dir;
  auto store = open_store(dir.path, 5);
  spill(*store, 30, true, 9);
  spill(*store, 31, true, 9);
  store->flush();
  const fs::path flipped = fs::path(store->folder()) / "000000000000001ew.kvb";
  const fs::path cut = fs::path(store->folder()) / "000000000000001fw.kvb";
  ASSERT_TRUE(fs::exists(flipped));
  {
    std::fstream f(flipped, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x5a');
  }
  fs::resize_file(cut, fs::file_size(cut) / 2);
  EXPECT_EQ(read_back(*store, {30}, true).first, 0u);
  EXPECT_EQ(read_back(*store, {31}, true).first, 0u);
  EXPECT_EQ(store->counters().corrupt, 2u);
  EXPECT_FALSE(fs::exists(flipped));
  EXPECT_FALSE(store->find(30));
  EXPECT_FALSE(store->find(31));
}

TEST(DiskBlockStore, AnotherFingerprintReusesNothingAndTheStaleFolderGoes) {
  TempDir dir;
  std::string old_folder;
  {
    auto store = open_store(dir.path, 0x100);
    spill(*store, 40, true, 1);
    store->flush();
    old_folder = store->folder();
  }
  {
    auto other_model = open_store(dir.path, 0x200, 1 << 20, "/models/b.gguf");  // another model: left alone
    EXPECT_EQ(other_model->counters().n_blocks, 0);
    EXPECT_TRUE(fs::exists(old_folder));
  }
  {
    auto other_layout = open_store(dir.path, 0x100, 1 << 20, "/models/a.gguf", 2);  // e.g. another KV type
    EXPECT_EQ(other_layout->counters().n_blocks, 0);
    EXPECT_TRUE(fs::exists(old_folder));
  }
  auto changed = open_store(dir.path, 0x300);  // the same model file, changed
  EXPECT_EQ(changed->counters().n_blocks, 0);
  EXPECT_FALSE(changed->find(40));
  EXPECT_FALSE(fs::exists(old_folder));
  EXPECT_GT(changed->counters().stale_bytes_removed, 0);
}

TEST(DiskBlockStore, TheBudgetDeletesLeastRecentlyUsedFilesAndUnfinishedOnesGoAtStart) {
  TempDir dir;
  const int64_t file_bytes = static_cast<int64_t>(kDiskBlockFixedHeaderBytes + 16 + kBase + kDiskBlockTrailerBytes);
  std::string folder;
  {
    auto store = open_store(dir.path, 3, 3 * file_bytes);
    for (uint64_t h = 50; h < 53; ++h) spill(*store, h, false, 1);
    store->flush();
    EXPECT_EQ(read_back(*store, {50}, false).first, 1u);  // 50 used again: 51 is now the oldest
    spill(*store, 53, false, 1);
    store->flush();
    EXPECT_FALSE(store->find(51));
    EXPECT_TRUE(store->find(50));
    EXPECT_EQ(store->counters().usage_bytes, 3 * file_bytes);
    folder = store->folder();
    EXPECT_FALSE(fs::exists(fs::path(folder) / "0000000000000033.kvb"));
  }
  std::ofstream(fs::path(folder) / "0000000000000099.kvb.tmp") << "half a block";
  auto store = open_store(dir.path, 3, 3 * file_bytes);
  EXPECT_EQ(store->counters().n_blocks, 3);
  EXPECT_FALSE(fs::exists(fs::path(folder) / "0000000000000099.kvb.tmp"));
}

TEST(DiskBlockStore, AFailingWritePausesSpillingAndFailsNothing) {
  TempDir dir;
  auto store = open_store(dir.path, 8);
  // The folder replaced by a file: every write fails, as on a full or broken disk.
  fs::remove_all(store->folder());
  std::ofstream(store->folder()) << "not a folder";
  spill(*store, 60, false, 1);
  store->flush();
  EXPECT_EQ(store->counters().writes, 0u);
  EXPECT_EQ(store->counters().dropped, 1u);
  std::vector<uint8_t> file = begin_disk_block(header_of(61, false));
  EXPECT_FALSE(store->spill(61, false, std::move(file)));  // paused: dropped at once
  EXPECT_EQ(read_back(*store, {60}, false).first, 0u);
}

}  // namespace
}  // namespace tokenmill::kv
