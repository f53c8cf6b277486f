#include "engine/kv_disk_tier.h"

#include <xxhash.h>

#include <algorithm>

namespace tokenmill::engine {

namespace {

// Bumped whenever the payload layout or what the fingerprint covers changes.
constexpr uint64_t kKvDiskFormatVersion = 1;

}  // namespace

kv::DiskFingerprint kv_disk_fingerprint(std::span<const uint8_t> model_file, const ops::KvShape& shape) {
  kv::DiskFingerprint fingerprint;
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  auto add = [&](const auto& value) { XXH3_64bits_update(state, &value, sizeof value); };
  add(static_cast<uint64_t>(model_file.size()));
  // The file in 64 MiB pieces, as mapped: a whole model is hashed, never copied.
  constexpr size_t kPiece = 64u << 20;
  for (size_t at = 0; at < model_file.size(); at += kPiece) {
    XXH3_64bits_update(state, model_file.data() + at, std::min(kPiece, model_file.size() - at));
  }
  fingerprint.model = XXH3_64bits_digest(state);
  XXH3_64bits_reset(state);
  add(kKvDiskFormatVersion);
  add(shape.n_layers);
  add(shape.block_size);
  add(shape.n_kv_heads);
  add(shape.head_dim);
  add(static_cast<int32_t>(shape.type));
  for (int32_t layer = 0; layer < shape.n_layers; ++layer) add(static_cast<uint8_t>(shape.is_windowed(layer)));
  fingerprint.layout = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return fingerprint;
}

KvDiskTier::KvDiskTier(kv::DiskBlockStore& store, ops::KvStorage& storage, kv::KvCacheManager& kv)
    : store_(store),
      storage_(storage),
      kv_(kv),
      block_bytes_per_layer_(static_cast<int64_t>(storage.shape().block_size) * storage.shape().row_bytes()) {
  for (int32_t layer = 0; layer < storage.shape().n_layers; ++layer) {
    (storage.shape().is_windowed(layer) ? window_bytes_ : base_bytes_) += 2 * block_bytes_per_layer_;
  }
}

std::vector<std::span<uint8_t>> KvDiskTier::segments(int32_t block, bool with_window) {
  const ops::KvShape& shape = storage_.shape();
  std::vector<std::span<uint8_t>> out;
  const auto n = static_cast<size_t>(block_bytes_per_layer_);
  for (bool windowed : {false, true}) {
    if (windowed && !with_window) break;
    for (int32_t layer = 0; layer < shape.n_layers; ++layer) {
      if (shape.is_windowed(layer) != windowed) continue;
      // A block's rows of one layer are consecutive (ops/kv_storage.h).
      out.emplace_back(storage_.key_row(layer, block, 0), n);
      out.emplace_back(storage_.value_row(layer, block, 0), n);
    }
  }
  return out;
}

void KvDiskTier::spill_registered() {
  for (const kv::RegisteredBlock& r : kv_.take_registered()) {
    // A shape without windowed layers has no window part: its files are always whole.
    const bool with_window = window_bytes_ == 0 || (kv_.has_window() && kv_.windows().slot_of(r.block) >= 0);
    if (store_.holds(r.hash, with_window)) continue;
    kv::DiskBlockHeader header;
    header.hash = r.hash;
    header.parent_hash = r.parent_hash;
    header.tokens = r.tokens;
    header.has_window = with_window;
    header.base_bytes = base_bytes_;
    header.window_bytes = with_window ? window_bytes_ : 0;
    std::vector<uint8_t> file = kv::begin_disk_block(header);
    for (std::span<uint8_t> segment : segments(r.block, with_window)) file.insert(file.end(), segment.begin(), segment.end());
    store_.spill(r.hash, with_window, std::move(file));
  }
}

std::shared_ptr<kv::DiskLoad> KvDiskTier::start_reads(const std::vector<kv::DiskBlockRead>& reads,
                                                      std::span<const int32_t> tokens) {
  const int32_t block_size = storage_.shape().block_size;
  std::vector<kv::DiskRead> requests;
  requests.reserve(reads.size());
  for (const kv::DiskBlockRead& r : reads) {
    kv::DiskRead request;
    request.expected.hash = r.hash;
    request.expected.parent_hash = r.parent_hash;
    auto block_tokens = tokens.subspan(static_cast<size_t>(r.index) * block_size, block_size);
    request.expected.tokens.assign(block_tokens.begin(), block_tokens.end());
    request.expected.base_bytes = base_bytes_;
    request.expected.window_bytes = window_bytes_;
    // Without windowed layers every file is whole; with them, only blocks the prefix's
    // next token sees need their window part.
    request.need_window = window_bytes_ > 0 && r.need_window;
    request.destinations = segments(r.block, request.need_window);
    requests.push_back(std::move(request));
  }
  return store_.read(std::move(requests));
}

}  // namespace tokenmill::engine
