// dot_neon-inl.h's dot products with the int8 dot product instruction (sdot, Armv8.2
// dotprod; compiled with -march=armv8.2-a+dotprod): call only where CpuFeatures::dotprod.
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

namespace tokenmill::quant::neon_dotprod {

#include "quant/kernels/dot_neon-inl.h"

}  // namespace tokenmill::quant::neon_dotprod
