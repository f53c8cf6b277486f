// The identity of the running executable's build: its GNU build ID (the linker's
// .note.gnu.build-id, a hash of the linked binary) in hex, so that anything measured on
// one build (the kernel tuner's cache) is not reused by another.
#pragma once

#include <string>

namespace tokenmill {

// "" when the executable carries no build ID (linked with --build-id=none).
std::string executable_build_id();

}  // namespace tokenmill
