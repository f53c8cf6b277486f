#include "ops/kv_storage.h"

#include <algorithm>

namespace tokenmill::ops {

KvStorage::KvStorage(const KvShape& shape) : shape_(shape) {
  const size_t per_layer = static_cast<size_t>(shape.n_blocks) * shape.block_size * shape.row_elements();
  keys_.resize(shape.n_layers);
  values_.resize(shape.n_layers);
  for (int32_t l = 0; l < shape.n_layers; ++l) {
    keys_[l].assign(per_layer, 0);
    values_[l].assign(per_layer, 0);
  }
}

void KvStorage::copy_block(int32_t from, int32_t to) {
  const size_t n = static_cast<size_t>(shape_.block_size) * shape_.row_elements();
  for (int32_t l = 0; l < shape_.n_layers; ++l) {
    std::copy_n(keys_[l].data() + offset(from, 0), n, keys_[l].data() + offset(to, 0));
    std::copy_n(values_[l].data() + offset(from, 0), n, values_[l].data() + offset(to, 0));
  }
}

}  // namespace tokenmill::ops
