// The second kind of KV memory a model with sliding-window layers needs (Gemma 3: five
// of every six layers see only the last `window` positions). Those layers keep their
// keys and values in window slots, one slot per block, attached to a block only while
// some sequence can still see its positions; the full-attention layers keep theirs in
// the block itself (kv/block_pool.h). A long sequence thus holds every block but only
// the last few window slots, and the cache fits several times more positions.
//
// A slot is attached to one block (slot_of(block)) and held by the sequences that still
// see that block. When the last holder lets go, the slot stays attached, so a later
// request whose cached prefix ends near that block can reuse it (kv_cache_manager.h),
// until attach() needs it for another block: unattached slots go first (at the start,
// lowest id first), then the least recently released attached ones, whose blocks lose
// their window part.
//
// Thread-safety: not thread-safe; owned by the engine thread.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <vector>

namespace tokenmill::kv {

class WindowSlots {
 public:
  // n_slots slots for the blocks 0 .. n_blocks - 1 of a block pool.
  WindowSlots(int32_t n_slots, int32_t n_blocks);

  int32_t n_slots() const { return static_cast<int32_t>(slots_.size()); }
  // Slots no sequence holds (attached or not): what attach() can hand out.
  int32_t n_free() const { return static_cast<int32_t>(unattached_.size() + released_.size()); }
  int32_t n_held() const { return n_slots() - n_free(); }

  // The slot attached to `block`, or -1.
  int32_t slot_of(int32_t block) const { return slot_of_block_[block]; }
  // slot_of() for every block, for ops::KvStorage to address the windowed layers.
  const std::vector<int32_t>& slot_of_block() const { return slot_of_block_; }
  int32_t holders(int32_t block) const;

  // Attaches a slot, held once, to each of `blocks` (which have none). All-or-nothing:
  // false, and no change, when fewer than blocks.size() slots are free.
  bool attach(std::span<const int32_t> blocks);
  // One more holder of block's slot (taking it back from the released list if it had
  // none).  REQUIRES: slot_of(block) >= 0.
  void hold(int32_t block);
  // One holder fewer; at none the slot stays attached but attach() may take it.
  // REQUIRES: holders(block) > 0.
  void release(int32_t block);
  // The block's contents are gone (the block is being reused): its slot, which nobody
  // holds, becomes unattached. No-op for a block without a slot.
  void detach(int32_t block);

 private:
  struct Slot {
    int32_t block = -1;   // attached to, or -1
    int32_t holders = 0;
    std::list<int32_t>::iterator released_position;  // valid while attached and unheld
  };

  int32_t take_free_slot();

  std::vector<Slot> slots_;
  std::vector<int32_t> slot_of_block_;  // [n_blocks], -1 when none
  std::vector<int32_t> unattached_;     // highest id first, so pop_back yields the lowest
  std::list<int32_t> released_;         // attached and unheld, least recently released first
};

}  // namespace tokenmill::kv
