// dot_neon-inl.h's dot products for every arm64 CPU (Armv8.0 NEON: int8 products by
// widening multiplies and pairwise adds).
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "quant/blocks.h"
#include "quant/iq_grids.h"
#include "quant/kernels/kquant_rows.h"
#include "quant/kernels/lattice_facts.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels_ref.h"

namespace tokenmill::quant::neon {

#include "quant/kernels/dot_neon-inl.h"

}  // namespace tokenmill::quant::neon
