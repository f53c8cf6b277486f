// The AVX2 panel kernels of legacy_panels_avx2.h with AVX-VNNI (vpdpbusd on 256-bit
// vectors): compiled with -mavxvnni, called only where the CPU has it.

#include "quant/kernels/legacy_panels_avx2.h"

namespace tokenmill::quant::avx_vnni {

TM_LEGACY_PANEL_ENTRIES(true)

}  // namespace tokenmill::quant::avx_vnni
