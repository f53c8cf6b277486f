// The AVX2 panel kernels of legacy_panels_avx2.h, without VNNI.

#include "quant/kernels/legacy_panels_avx2.h"

namespace tokenmill::quant::avx2 {

TM_LEGACY_PANEL_ENTRIES(false)

}  // namespace tokenmill::quant::avx2
