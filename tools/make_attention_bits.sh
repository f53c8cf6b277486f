#!/usr/bin/env bash
# Records the attention kernels' output bits (tests/fixtures/ops/attention_bits.txt) that
# CpuAttentionKernels.WidestBodyGivesTheRecordedBitsOnEveryTarget compares every target's
# widest body with. Run on an x86-64 machine after scripts/build; the AVX2 and AVX-512
# bodies give the same bits, so either may write it (TOKENMILL_ISA does not cap the test's
# choice: it takes the widest body the CPU has).
set -euo pipefail
cd "$(dirname "$0")/.."
TOKENMILL_WRITE_ATTENTION_BITS=1 build/tests/test_ops --gtest_filter='CpuAttentionKernels.WidestBodyGivesTheRecordedBitsOnEveryTarget'
