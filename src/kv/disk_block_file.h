// The file of one KV block on disk (kv/disk_block_store.h): a header naming the block,
// the block's keys and values, and a checksum per part, so that a block read without its
// sliding-window part is read (and checked) without those bytes.
//
//   offset        bytes
//   0             8      magic "TMKVBLK2"
//   8             8      fingerprint: the model and cache layout the contents belong to
//   16            8      the block's chained hash (kv/block_pool.h)
//   24            8      its parent block's hash (0 for a sequence's first block)
//   32            4      n_tokens
//   36            4      flags: bit 0 - the sliding-window layers' part is present
//   40            8      base_bytes: the full-attention layers' keys and values
//   48            8      window_bytes: the sliding-window layers' (0 when absent)
//   56            4 * n_tokens   the block's tokens (int32, little-endian)
//   head          base_bytes     base part      (head = 56 + 4 * n_tokens)
//   head + base   window_bytes   window part
//   end - 16      8      XXH3-64 of bytes [0, head + base_bytes)
//   end - 8       8      XXH3-64 of the window part
//
// A file is accepted only whole and only for the block asked for: a torn write, a
// flipped bit, another model's block or a hash collision (other tokens) is rejected.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace tokenmill::kv {

struct DiskBlockHeader {
  uint64_t fingerprint = 0;
  uint64_t hash = 0;
  uint64_t parent_hash = 0;
  std::vector<int32_t> tokens;
  bool has_window = false;
  int64_t base_bytes = 0;
  int64_t window_bytes = 0;  // 0 unless has_window
};

inline constexpr size_t kDiskBlockFixedHeaderBytes = 56;
inline constexpr size_t kDiskBlockTrailerBytes = 16;

// The file's header; the caller appends base_bytes + window_bytes of payload, then
// calls seal_disk_block().
std::vector<uint8_t> begin_disk_block(const DiskBlockHeader& header);
// Appends the checksums. REQUIRES: the payload the header announced was appended.
void seal_disk_block(std::vector<uint8_t>& file);

// Where the parts of a file lie, from its fixed header (kDiskBlockFixedHeaderBytes) and
// its size; an error when they do not add up to file_size.
struct DiskBlockExtent {
  size_t head_bytes = 0;    // header and tokens
  size_t base_bytes = 0;
  size_t window_bytes = 0;
  size_t base_end() const { return head_bytes + base_bytes; }
};
Result<DiskBlockExtent> disk_block_extent(std::span<const uint8_t> fixed_header, uint64_t file_size);

// The payload of a block file, given its first `extent.base_end()` bytes (and the window
// part after them when need_window) and its trailer: base_bytes, then window_bytes when
// need_window. Errors (CorruptData) name what does not match `expected` (fingerprint,
// hash, parent, tokens, the base size), a missing window part when need_window, or a bad
// checksum.
Result<std::span<const uint8_t>> open_disk_block(std::span<const uint8_t> leading, std::span<const uint8_t> trailer,
                                                 const DiskBlockHeader& expected, bool need_window);
// The same over a whole file in memory.
Result<std::span<const uint8_t>> open_disk_block(std::span<const uint8_t> file, const DiskBlockHeader& expected,
                                                 bool need_window);

}  // namespace tokenmill::kv
