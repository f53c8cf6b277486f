#include "base/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>

#include <fstream>
#endif

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace tokenmill {

#if defined(__x86_64__)

namespace {

uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

// Linux keeps AMX's 8 KB of tile data out of a process's saved state until the process
// asks for it (arch/x86/include/uapi/asm/prctl.h); without the grant the first tile
// instruction faults. The grant is process-wide and idempotent.
bool request_amx_permission() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr int kArchReqXcompPerm = 0x1023;
  constexpr int kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

}  // namespace

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
  const bool osxsave = ecx & (1u << 27);
  f.fma = ecx & (1u << 12);
  f.f16c = ecx & (1u << 29);
  const bool avx = ecx & (1u << 28);
  if (!osxsave || !avx) return CpuFeatures{};
  const uint64_t xcr0 = read_xcr0();
  const bool os_avx = (xcr0 & 0x6) == 0x6;
  const bool os_avx512 = (xcr0 & 0xe6) == 0xe6;
  if (!os_avx) return CpuFeatures{};
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return f;
  f.avx2 = ebx & (1u << 5);
  if (os_avx512) {
    f.avx512f = ebx & (1u << 16);
    f.avx512dq = ebx & (1u << 17);
    f.avx512bw = ebx & (1u << 30);
    f.avx512vl = ebx & (1u << 31);
    f.avx512vnni = ecx & (1u << 11);
  }
  const bool amx_tile = edx & (1u << 24), amx_int8 = edx & (1u << 25);
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;  // XTILECFG and XTILEDATA
  f.amx_int8 = amx_tile && amx_int8 && os_amx && request_amx_permission();
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) {
    f.avx_vnni = eax & (1u << 4);
    if (os_avx512) f.avx512bf16 = eax & (1u << 5);
  }
  return f;
}

std::string cpu_brand() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(0x80000000, &eax, &ebx, &ecx, &edx) || eax < 0x80000004) return "unknown CPU";
  char brand[49] = {};
  for (unsigned leaf = 0; leaf < 3; ++leaf) {
    unsigned regs[4];
    __get_cpuid(0x80000002 + leaf, &regs[0], &regs[1], &regs[2], &regs[3]);
    std::memcpy(brand + 16 * leaf, regs, sizeof regs);
  }
  std::string s(brand);
  const size_t first = s.find_first_not_of(' ');
  if (first == std::string::npos) return "unknown CPU";
  s = s.substr(first);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

#elif defined(__aarch64__) && defined(__linux__)

// The bits of AT_HWCAP / AT_HWCAP2 (arch/arm64/include/uapi/asm/hwcap.h), named here so
// an older libc's headers need not define them.
namespace hwcap {
constexpr unsigned long kAsimdHp = 1ul << 10;
constexpr unsigned long kAsimdDp = 1ul << 20;
constexpr unsigned long kI8mm = 1ul << 13;  // in AT_HWCAP2
}  // namespace hwcap

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
  const unsigned long caps = getauxval(AT_HWCAP), caps2 = getauxval(AT_HWCAP2);
  f.neon = true;  // Advanced SIMD is part of the AArch64 base architecture
  f.fp16 = caps & hwcap::kAsimdHp;
  f.dotprod = caps & hwcap::kAsimdDp;
  f.i8mm = caps2 & hwcap::kI8mm;
  return f;
}

std::string cpu_brand() {
  std::ifstream info("/proc/cpuinfo");
  std::string line, implementer, part;
  while (std::getline(info, line) && (implementer.empty() || part.empty())) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos || colon + 2 > line.size()) continue;
    if (line.rfind("CPU implementer", 0) == 0) implementer = line.substr(colon + 2);
    if (line.rfind("CPU part", 0) == 0) part = line.substr(colon + 2);
  }
  if (implementer.empty()) return "unknown CPU";
  return "Arm CPU " + implementer + ":" + part;
}

#else

CpuFeatures detect_cpu_features() { return CpuFeatures{}; }
std::string cpu_brand() { return "unknown CPU"; }

#endif

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f = detect_cpu_features();
    const char* cap = std::getenv("TOKENMILL_ISA");
    if (cap != nullptr) {
      if (std::strcmp(cap, "scalar") == 0) {
        f = CpuFeatures{};
      } else if (std::strcmp(cap, "neon") == 0) {
        f.dotprod = f.i8mm = false;
      } else if (std::strcmp(cap, "avx512") == 0) {
        f.amx_int8 = false;
      } else if (std::strcmp(cap, "avx2") == 0 || std::strcmp(cap, "avxvnni") == 0) {
        CpuFeatures capped;
        capped.avx2 = f.avx2;
        capped.fma = f.fma;
        capped.f16c = f.f16c;
        capped.avx_vnni = std::strcmp(cap, "avxvnni") == 0 && f.avx_vnni;
        f = capped;
      }
    }
    return f;
  }();
  return features;
}

std::string CpuFeatures::to_string() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512dq, "avx512dq");
  add(avx512vl, "avx512vl");
  add(avx512vnni, "avx512vnni");
  add(avx512bf16, "avx512bf16");
  add(avx_vnni, "avxvnni");
  add(amx_int8, "amx-int8");
  add(neon, "neon");
  add(dotprod, "dotprod");
  add(i8mm, "i8mm");
  add(fp16, "fp16");
  return s.empty() ? "scalar" : s;
}

}  // namespace tokenmill
