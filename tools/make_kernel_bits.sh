#!/usr/bin/env bash
# Records the output bits that the cross-target tests compare every target's kernels with:
#   tests/fixtures/quant/kernel_bits.txt  (Kernels.DispatchedKernelsGiveTheRecordedBitsOnEveryTarget)
#   tests/fixtures/ops/attention_bits.txt (CpuAttentionKernels.WidestBodyGivesTheRecordedBitsOnEveryTarget)
#   tests/fixtures/model/default_model_logits.txt (SameLogitsEverywhere.DefaultModelMatchesTheRecordedBits)
# Run on an x86-64 machine with AVX2 after scripts/build: its AVX2 and AVX-512 bodies give
# the same bits, and scripts/test_arm64 checks the NEON bodies against these files.
set -euo pipefail
cd "$(dirname "$0")/.."
export TOKENMILL_WRITE_KERNEL_BITS=1
build/tests/test_quant --gtest_filter='Kernels.DispatchedKernelsGiveTheRecordedBitsOnEveryTarget'
build/tests/test_ops --gtest_filter='CpuAttentionKernels.WidestBodyGivesTheRecordedBitsOnEveryTarget'
build/tests/test_model --gtest_filter='SameLogitsEverywhere.*'
