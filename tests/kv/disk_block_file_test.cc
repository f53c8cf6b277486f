#include "kv/disk_block_file.h"

#include <gtest/gtest.h>

namespace tokenmill::kv {
namespace {

DiskBlockHeader header(bool has_window) {
  DiskBlockHeader h;
  h.fingerprint = 0x1234;
  h.hash = 0xabcdef;
  h.parent_hash = 0x42;
  h.tokens = {5, 6, 7, 8};
  h.has_window = has_window;
  h.base_bytes = 10;
  h.window_bytes = 6;
  return h;
}

std::vector<uint8_t> file_of(const DiskBlockHeader& h) {
  std::vector<uint8_t> file = begin_disk_block(h);
  for (int i = 0; i < h.base_bytes + (h.has_window ? h.window_bytes : 0); ++i) file.push_back(static_cast<uint8_t>(i + 1));
  seal_disk_block(file);
  return file;
}

TEST(DiskBlockFile, RoundTripGivesThePayload) {
  const auto h = header(true);
  const auto file = file_of(h);
  auto base = open_disk_block(file, h, false);
  ASSERT_TRUE(base.ok()) << base.status().message();
  ASSERT_EQ(base->size(), 10u);
  EXPECT_EQ((*base)[0], 1);
  auto whole = open_disk_block(file, h, true);
  ASSERT_TRUE(whole.ok());
  ASSERT_EQ(whole->size(), 16u);
  EXPECT_EQ((*whole)[15], 16);
}

TEST(DiskBlockFile, EveryFlippedBitAndEveryTruncationIsRejected) {
  const auto h = header(true);
  const auto file = file_of(h);
  const size_t base_end = kDiskBlockFixedHeaderBytes + 4 * h.tokens.size() + static_cast<size_t>(h.base_bytes);
  const size_t base_sum = file.size() - kDiskBlockTrailerBytes;
  for (size_t byte = 0; byte < file.size(); ++byte) {
    for (int bit = 0; bit < 8; bit += 3) {
      auto damaged = file;
      damaged[byte] ^= static_cast<uint8_t>(1u << bit);
      EXPECT_FALSE(open_disk_block(damaged, h, true).ok()) << "byte " << byte << " bit " << bit;
      // A read of the base part alone checks the bytes it uses, and only those.
      const bool used = byte < base_end || (byte >= base_sum && byte < base_sum + 8);
      EXPECT_EQ(open_disk_block(damaged, h, false).ok(), !used) << "byte " << byte << " bit " << bit;
    }
  }
  for (size_t size = 0; size < file.size(); ++size) {
    EXPECT_FALSE(open_disk_block(std::span<const uint8_t>(file).first(size), h, false).ok()) << size;
  }
}

TEST(DiskBlockFile, AnotherBlockOrModelOrLayoutIsRejected) {
  const auto h = header(true);
  const auto file = file_of(h);
  auto other = h;
  other.fingerprint = 0x9999;
  EXPECT_EQ(open_disk_block(file, other, false).status().code(), ErrorCode::kCorruptData);
  other = h;
  other.tokens[2] = 70;  // the same hash over other tokens: a collision
  EXPECT_FALSE(open_disk_block(file, other, false).ok());
  other = h;
  other.parent_hash = 1;
  EXPECT_FALSE(open_disk_block(file, other, false).ok());
  other = h;
  other.base_bytes = 12;
  EXPECT_FALSE(open_disk_block(file, other, false).ok());
}

TEST(DiskBlockFile, AFileWithoutTheWindowPartServesOnlyBaseReads) {
  const auto h = header(false);
  const auto file = file_of(h);
  EXPECT_TRUE(open_disk_block(file, h, false).ok());
  const auto refused = open_disk_block(file, h, true);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("window"), std::string::npos);
}

}  // namespace
}  // namespace tokenmill::kv
