#!/usr/bin/env bash
# Writes the reference model every quantization type is made from and compared against:
# the default model's weights dequantized to F32 (models/ is ignored by git).
#
#   tools/make_reference_model.sh [SOURCE.gguf] [OUT.gguf] [F32|F16|BF16]
#
# The default model ships only in Q4_K_M, so its reference is exact in Q4_K / Q5_0 / Q8_0:
# a Q4_K_M made from it is flattered (see docs/quantization.md). F32 is the default because
# the dequantized values are not all representable in F16.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${TOKENMILL_BIN:-$root/build/bin/tokenmill}"
source="${1:-$root/models/gemma-3-270m-q4_k_m.gguf}"
out="${2:-$root/models/gemma-3-270m-f32.gguf}"
type="${3:-F32}"
exec "$bin" quantize "$source" "$out" "$type"
