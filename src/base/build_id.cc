#include "base/build_id.h"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace tokenmill {

namespace {

// The build ID note among the main executable's segments (the first object that
// dl_iterate_phdr reports is the executable).
int find_build_id(dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::string*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + segment.p_vaddr);
    const uint8_t* end = p + segment.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) note;
      std::memcpy(&note, p, sizeof note);
      const uint8_t* name = p + sizeof note;
      const uint8_t* desc = name + (note.n_namesz + 3) / 4 * 4;
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0 &&
          desc + note.n_descsz <= end) {
        for (uint32_t k = 0; k < note.n_descsz; ++k) {
          char hex[3];
          std::snprintf(hex, sizeof hex, "%02x", desc[k]);
          out->append(hex);
        }
        return 1;
      }
      p = desc + (note.n_descsz + 3) / 4 * 4;
    }
  }
  return 1;  // only the executable is searched
}

}  // namespace

std::string executable_build_id() {
  std::string id;
  dl_iterate_phdr(find_build_id, &id);
  return id;
}

}  // namespace tokenmill
