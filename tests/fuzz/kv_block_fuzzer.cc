// The reader of the prefix cache's disk tier (kv/disk_block_file.h): a block file on
// disk is untrusted (torn by a crash, damaged, written by another version or by hand).
// Each input is tried as a whole file, and again sealed with valid checksums (so the
// fuzzer reaches the checks behind them), against an expected block read from its own
// header; a malformed file must give a Status, never a crash or a read out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "kv/disk_block_file.h"

using namespace tokenmill;

namespace {

volatile size_t sink;  // keeps the reads below from being optimized away

// The block the header claims to be (or an empty one when too short), as a reader would
// expect it; `flip` varies one expectation so that the mismatch paths run too.
kv::DiskBlockHeader expected_from(std::span<const uint8_t> file, uint8_t flip) {
  kv::DiskBlockHeader h;
  if (file.size() < kv::kDiskBlockFixedHeaderBytes) return h;
  std::memcpy(&h.fingerprint, file.data() + 8, 8);
  std::memcpy(&h.hash, file.data() + 16, 8);
  std::memcpy(&h.parent_hash, file.data() + 24, 8);
  uint32_t n_tokens;
  std::memcpy(&n_tokens, file.data() + 32, 4);
  std::memcpy(&h.base_bytes, file.data() + 40, 8);
  std::memcpy(&h.window_bytes, file.data() + 48, 8);
  const size_t available = (file.size() - kv::kDiskBlockFixedHeaderBytes) / 4;
  h.tokens.resize(std::min<size_t>(n_tokens, available));
  if (!h.tokens.empty()) std::memcpy(h.tokens.data(), file.data() + kv::kDiskBlockFixedHeaderBytes, 4 * h.tokens.size());
  if (flip & 1) h.fingerprint ^= 1;
  if ((flip & 2) && !h.tokens.empty()) h.tokens.back() ^= 1;
  return h;
}

void try_open(std::span<const uint8_t> file, uint8_t flip) {
  const kv::DiskBlockHeader expected = expected_from(file, flip);
  for (bool need_window : {false, true}) {
    auto payload = kv::open_disk_block(file, expected, need_window);
    if (payload.ok() && !payload->empty()) sink = sink + payload->front() + payload->back();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t flip = data[0];
  const std::span<const uint8_t> input(data + 1, size - 1);
  try_open(input, flip);
  // Sealed: the checksums made valid over whatever the header claims.
  if (input.size() >= kv::kDiskBlockFixedHeaderBytes) {
    auto extent = kv::disk_block_extent(input, input.size() + kv::kDiskBlockTrailerBytes);
    if (extent.ok()) {
      std::vector<uint8_t> sealed(input.begin(), input.end());
      kv::seal_disk_block(sealed);
      try_open(sealed, flip);
    }
  }
  return 0;
}
