#include "quant/iq_grids.h"

namespace tokenmill::quant {

#include "quant/iq_grids.inc"

}  // namespace tokenmill::quant
