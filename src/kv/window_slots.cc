#include "kv/window_slots.h"

#include <cassert>

namespace tokenmill::kv {

WindowSlots::WindowSlots(int32_t n_slots, int32_t n_blocks) : slots_(n_slots), slot_of_block_(n_blocks, -1) {
  unattached_.reserve(n_slots);
  for (int32_t id = n_slots - 1; id >= 0; --id) unattached_.push_back(id);
}

int32_t WindowSlots::holders(int32_t block) const {
  const int32_t slot = slot_of_block_[block];
  return slot < 0 ? 0 : slots_[slot].holders;
}

int32_t WindowSlots::take_free_slot() {
  if (!unattached_.empty()) {
    const int32_t id = unattached_.back();
    unattached_.pop_back();
    return id;
  }
  const int32_t id = released_.front();
  released_.pop_front();
  slot_of_block_[slots_[id].block] = -1;  // that block loses its window part
  slots_[id].block = -1;
  return id;
}

bool WindowSlots::attach(std::span<const int32_t> blocks) {
  if (static_cast<int32_t>(blocks.size()) > n_free()) return false;
  for (int32_t block : blocks) {
    assert(slot_of_block_[block] < 0);
    const int32_t id = take_free_slot();
    slots_[id].block = block;
    slots_[id].holders = 1;
    slot_of_block_[block] = id;
  }
  return true;
}

void WindowSlots::hold(int32_t block) {
  const int32_t id = slot_of_block_[block];
  assert(id >= 0);
  Slot& slot = slots_[id];
  if (slot.holders++ == 0) released_.erase(slot.released_position);
}

void WindowSlots::release(int32_t block) {
  const int32_t id = slot_of_block_[block];
  assert(id >= 0 && slots_[id].holders > 0);
  Slot& slot = slots_[id];
  if (--slot.holders > 0) return;
  released_.push_back(id);
  slot.released_position = std::prev(released_.end());
}

void WindowSlots::detach(int32_t block) {
  const int32_t id = slot_of_block_[block];
  if (id < 0) return;
  Slot& slot = slots_[id];
  assert(slot.holders == 0);
  released_.erase(slot.released_position);
  slot.block = -1;
  slot_of_block_[block] = -1;
  unattached_.push_back(id);
}

}  // namespace tokenmill::kv
