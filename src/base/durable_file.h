// Files that are either wholly written or not there: written to a temporary name in the
// same directory, fsynced, renamed over the target, and the directory fsynced, so that a
// crash or power loss leaves the old contents or the new, never a mix.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace tokenmill {

Status write_file_durably(const std::string& path, std::string_view contents);

// Renames from to to (same file system) and fsyncs to's directory.
Status rename_durably(const std::string& from, const std::string& to);

// fsyncs a directory, so that names created or removed in it last.
Status sync_directory(const std::string& dir);

}  // namespace tokenmill
