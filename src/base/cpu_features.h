// Which instruction sets this CPU has, read once: on x86-64 by cpuid + xgetbv (so an OS
// that does not save AVX-512 state reports it absent), on arm64 from the kernel's
// hardware capabilities (getauxval). Kernels are chosen from this at start-up.
#pragma once

#include <string>

namespace tokenmill {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512dq = false;
  bool avx512vl = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool avx_vnni = false;
  // AMX tiles with int8 dot products, usable: the CPU has them, the OS saves their state
  // (XCR0) and granted this process the right to use them (Linux arch_prctl).
  bool amx_int8 = false;
  // arm64: Advanced SIMD (every AArch64 CPU has it), the int8 dot products (sdot, Armv8.2
  // dotprod), the int8 matrix multiply (smmla, i8mm), half-precision arithmetic.
  bool neon = false;
  bool dotprod = false;
  bool i8mm = false;
  bool fp16 = false;

  // The AVX-512 subset our kernels use (F, BW, DQ, VL, VNNI).
  bool has_avx512_kernels() const { return avx512f && avx512bw && avx512dq && avx512vl && avx512vnni; }
  bool has_avx2_kernels() const { return avx2 && fma && f16c; }
  // AVX2 kernels with the VEX-encoded vpdpbusd (Alder Lake and later, Zen 5).
  bool has_avx_vnni_kernels() const { return has_avx2_kernels() && avx_vnni; }
  // AVX-512 kernels whose many-token legacy-format matmuls run on AMX tiles (Sapphire
  // Rapids and later Xeons).
  bool has_amx_kernels() const { return has_avx512_kernels() && amx_int8; }
  bool has_neon_kernels() const { return neon; }
  // The widest kernel set these features run: "amx" (AVX-512 with AMX tiles), "avx512",
  // "avxvnni" (AVX2 with AVX-VNNI), "avx2", "neon" (arm64) or "scalar" (what the matmul
  // kernels dispatch to; printed by bench and serve).
  const char* kernel_set() const {
    if (has_amx_kernels()) return "amx";
    if (has_avx512_kernels()) return "avx512";
    if (has_avx_vnni_kernels()) return "avxvnni";
    if (has_avx2_kernels()) return "avx2";
    return has_neon_kernels() ? "neon" : "scalar";
  }
  std::string to_string() const;
};

// Detected once, then cached. TOKENMILL_ISA caps what is reported, so tests and
// benchmarks can force a lower path on a bigger CPU: scalar, avx2 (plain AVX2 + FMA +
// F16C), avxvnni (the same with AVX-VNNI where the CPU has it), avx512 (AVX-512 without
// AMX); on arm64 neon (Advanced SIMD without dotprod and i8mm).
const CpuFeatures& cpu_features();

// Features as detected, ignoring TOKENMILL_ISA.
CpuFeatures detect_cpu_features();

// The CPU's brand string (cpuid 0x80000002..4), e.g. "AMD EPYC 9R45 96-Core Processor";
// on arm64 the implementer and part numbers the kernel reports ("Arm CPU 0x41:0xd0c");
// "unknown CPU" where there is none.
std::string cpu_brand();

}  // namespace tokenmill
