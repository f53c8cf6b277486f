// Per-thread working memory for the matmul kernels, kept between calls.
//
// A batched matmul is cut into chunks (several per thread) and each chunk is one kernel
// call that stages its tokens' activations and builds weight panels in scratch buffers.
// Allocating and freeing those every call cost more than the arithmetic of a small
// chunk: 40 KB malloc'd and freed per call let glibc hand pages back to the kernel and
// fault them in again (clear_page in the profile), and doubling the chunks per thread
// made a 16-sequence decode step 8% slower. The buffers here only grow.
//
// Not inline: this file is shared by kernels compiled for different instruction sets.
#pragma once

#include <cstddef>

namespace tokenmill::quant {

// Which buffer: a kernel call may use each of these at once.
enum class ScratchSlot { kStagedMeta, kStagedQuants, kPanel, kSignedCodes, kTileCodes, kTileQuants, kCount };

// At least `bytes` of 64-byte-aligned memory owned by this thread, valid until the next
// call for the same slot on the same thread. Contents are undefined.
void* thread_scratch(ScratchSlot slot, size_t bytes);

}  // namespace tokenmill::quant
