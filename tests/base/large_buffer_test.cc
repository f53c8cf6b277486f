#include "base/large_buffer.h"

#include <gtest/gtest.h>

#include <cstring>

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

TEST(LargeBuffer, SharedOwnersKeepItAlive) {
  auto first = allocate_large_buffer(1 << 20);
  first[100] = 7;
  auto second = first;
  first.reset();
  EXPECT_EQ(second[100], 7);
}

}  // namespace
}  // namespace tokenmill
