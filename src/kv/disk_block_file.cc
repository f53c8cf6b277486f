#include "kv/disk_block_file.h"

#include <xxhash.h>

#include <cstring>

namespace tokenmill::kv {

namespace {

constexpr char kMagic[8] = {'T', 'M', 'K', 'V', 'B', 'L', 'K', '2'};
// More tokens than any block holds: a header claiming them is damaged.
constexpr uint32_t kMaxBlockTokens = 1u << 16;

template <typename T>
void put(std::vector<uint8_t>& out, T value) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(&value);
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

template <typename T>
T get(const uint8_t* at) {
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

}  // namespace

std::vector<uint8_t> begin_disk_block(const DiskBlockHeader& header) {
  std::vector<uint8_t> file;
  file.reserve(kDiskBlockFixedHeaderBytes + 4 * header.tokens.size() + static_cast<size_t>(header.base_bytes) +
               static_cast<size_t>(header.window_bytes) + kDiskBlockTrailerBytes);
  file.resize(sizeof kMagic);
  std::memcpy(file.data(), kMagic, sizeof kMagic);
  put<uint64_t>(file, header.fingerprint);
  put<uint64_t>(file, header.hash);
  put<uint64_t>(file, header.parent_hash);
  put<uint32_t>(file, static_cast<uint32_t>(header.tokens.size()));
  put<uint32_t>(file, header.has_window ? 1u : 0u);
  put<int64_t>(file, header.base_bytes);
  put<int64_t>(file, header.has_window ? header.window_bytes : 0);
  for (int32_t token : header.tokens) put<int32_t>(file, token);
  return file;
}

void seal_disk_block(std::vector<uint8_t>& file) {
  const size_t base_end = kDiskBlockFixedHeaderBytes + 4 * size_t{get<uint32_t>(file.data() + 32)} +
                          static_cast<size_t>(get<int64_t>(file.data() + 40));
  const uint64_t base_sum = XXH3_64bits(file.data(), base_end);
  const uint64_t window_sum = XXH3_64bits(file.data() + base_end, file.size() - base_end);
  put<uint64_t>(file, base_sum);
  put<uint64_t>(file, window_sum);
}

Result<DiskBlockExtent> disk_block_extent(std::span<const uint8_t> fixed_header, uint64_t file_size) {
  if (fixed_header.size() < kDiskBlockFixedHeaderBytes || file_size < kDiskBlockFixedHeaderBytes + kDiskBlockTrailerBytes) {
    return corrupt_data("KV block file of " + std::to_string(file_size) + " bytes is shorter than its header");
  }
  const uint8_t* p = fixed_header.data();
  if (std::memcmp(p, kMagic, sizeof kMagic) != 0) return corrupt_data("not a KV block file (bad magic)");
  const uint32_t n_tokens = get<uint32_t>(p + 32);
  const int64_t base_bytes = get<int64_t>(p + 40);
  const int64_t window_bytes = get<int64_t>(p + 48);
  if (n_tokens > kMaxBlockTokens || base_bytes < 0 || window_bytes < 0 || base_bytes > int64_t{1} << 40 ||
      window_bytes > int64_t{1} << 40) {
    return corrupt_data("KV block file header has impossible sizes");
  }
  DiskBlockExtent extent{kDiskBlockFixedHeaderBytes + 4 * size_t{n_tokens}, static_cast<size_t>(base_bytes),
                         static_cast<size_t>(window_bytes)};
  if (extent.base_end() + extent.window_bytes + kDiskBlockTrailerBytes != file_size) {
    return corrupt_data("KV block file size does not match its header (torn or cut short)");
  }
  return extent;
}

Result<std::span<const uint8_t>> open_disk_block(std::span<const uint8_t> leading, std::span<const uint8_t> trailer,
                                                 const DiskBlockHeader& expected, bool need_window) {
  if (trailer.size() != kDiskBlockTrailerBytes) return corrupt_data("KV block file trailer missing");
  if (leading.size() < kDiskBlockFixedHeaderBytes) return corrupt_data("KV block file shorter than its header");
  const uint8_t* p = leading.data();
  const size_t head = kDiskBlockFixedHeaderBytes + 4 * size_t{get<uint32_t>(p + 32)};
  const auto base_bytes = get<int64_t>(p + 40);
  const auto window_bytes = get<int64_t>(p + 48);
  if (base_bytes < 0 || window_bytes < 0) return corrupt_data("KV block file header has impossible sizes");
  const size_t base_end = head + static_cast<size_t>(base_bytes);
  const size_t needed = base_end + (need_window ? static_cast<size_t>(window_bytes) : 0);
  if (leading.size() < needed) return corrupt_data("KV block file shorter than its header says");
  if (XXH3_64bits(p, base_end) != get<uint64_t>(trailer.data())) {
    return corrupt_data("KV block file checksum mismatch (torn or damaged file)");
  }
  if (std::memcmp(p, kMagic, sizeof kMagic) != 0) return corrupt_data("not a KV block file (bad magic)");
  if (get<uint64_t>(p + 8) != expected.fingerprint) return corrupt_data("KV block of another model or cache layout");
  if (get<uint64_t>(p + 16) != expected.hash || get<uint64_t>(p + 24) != expected.parent_hash) {
    return corrupt_data("KV block file holds another block (hash or parent differs)");
  }
  const bool has_window = (get<uint32_t>(p + 36) & 1u) != 0;
  if (get<uint32_t>(p + 32) != expected.tokens.size()) return corrupt_data("KV block file holds another number of tokens");
  if (base_bytes != expected.base_bytes) return corrupt_data("KV block file has another layer layout");
  if (!has_window && window_bytes != 0) return corrupt_data("KV block file has a bad window size");
  if (!expected.tokens.empty() &&
      std::memcmp(p + kDiskBlockFixedHeaderBytes, expected.tokens.data(), 4 * expected.tokens.size()) != 0) {
    return corrupt_data("KV block file holds other tokens (hash collision)");
  }
  if (!need_window) return leading.subspan(head, static_cast<size_t>(base_bytes));
  if (!has_window) return corrupt_data("KV block file lacks the sliding-window layers' part");
  if (window_bytes != expected.window_bytes) return corrupt_data("KV block file has another window layout");
  if (XXH3_64bits(p + base_end, static_cast<size_t>(window_bytes)) != get<uint64_t>(trailer.data() + 8)) {
    return corrupt_data("KV block file checksum mismatch in its window part (torn or damaged file)");
  }
  return leading.subspan(head, static_cast<size_t>(base_bytes + window_bytes));
}

Result<std::span<const uint8_t>> open_disk_block(std::span<const uint8_t> file, const DiskBlockHeader& expected,
                                                 bool need_window) {
  auto extent = disk_block_extent(file, file.size());
  if (!extent.ok()) return extent.status();
  return open_disk_block(file.first(file.size() - kDiskBlockTrailerBytes), file.last(kDiskBlockTrailerBytes), expected,
                         need_window);
}

}  // namespace tokenmill::kv
