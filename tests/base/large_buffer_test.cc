#include "base/large_buffer.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace tokenmill {
namespace {

TEST(LargeBuffer, IsHugePageAlignedAndWritableToTheEnd) {
  for (size_t n : {size_t{1}, size_t{4096}, size_t{3} << 20, (size_t{5} << 20) + 17}) {
    auto buffer = allocate_large_buffer(n);
    ASSERT_NE(buffer.get(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.get()) % (size_t{2} << 20), 0u) << n;
    std::memset(buffer.get(), 0xab, n);
    EXPECT_EQ(buffer[0], 0xab);
    EXPECT_EQ(buffer[n - 1], 0xab);
  }
}

TEST(LargeBuffer, CommittedNowReadsAsZerosAndIsResident) {
  const size_t n = (size_t{6} << 20) + 4096;
  auto buffer = allocate_large_buffer(n, Commit::kNow);
  ASSERT_NE(buffer.get(), nullptr);
  // Resident before any write from here: mincore reports every page in memory.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((n + page - 1) / page);
  ASSERT_EQ(mincore(buffer.get(), n, resident.data()), 0);
  for (size_t i = 0; i < resident.size(); ++i) ASSERT_TRUE(resident[i] & 1) << "page " << i;
  for (size_t i = 0; i < n; i += 4096) ASSERT_EQ(buffer[i], 0) << i;
  EXPECT_EQ(buffer[n - 1], 0);
}

TEST(LargeBuffer, SharedOwnersKeepItAlive) {
  auto first = allocate_large_buffer(1 << 20);
  first[100] = 7;
  auto second = first;
  first.reset();
  EXPECT_EQ(second[100], 7);
}

}  // namespace
}  // namespace tokenmill
