// A file of lines that only grows, for results written as they are produced: each line
// goes out in one write() and is flushed to the disk at most sync_interval later, so a
// killed process leaves every line it wrote whole. Opening an existing file reads its
// lines and cuts off a last line without its newline (a write the kill interrupted);
// a write the disk refuses is undone, so the file never holds part of a line.
//
// Thread-safety: none; one writer.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tokenmill {

class LineFile {
 public:
  // Opens path for appending, creating it; the complete lines already there go to
  // *existing (without their newlines).
  static Result<LineFile> open(const std::string& path, std::vector<std::string>* existing,
                               std::chrono::milliseconds sync_interval = std::chrono::milliseconds(500));
  LineFile(LineFile&& other) noexcept;
  LineFile& operator=(LineFile&& other) noexcept;
  LineFile(const LineFile&) = delete;
  LineFile& operator=(const LineFile&) = delete;
  ~LineFile();  // syncs and closes

  // Appends line and a newline (line must hold none).
  Status append(std::string_view line);
  // Flushes everything appended to the disk.
  Status sync();
  const std::string& path() const { return path_; }

 private:
  LineFile(std::string path, int fd, off_t size, std::chrono::milliseconds sync_interval);

  std::string path_;
  int fd_ = -1;
  off_t size_ = 0;  // bytes of whole lines
  std::chrono::milliseconds sync_interval_;
  std::chrono::steady_clock::time_point last_sync_;
  bool dirty_ = false;
};

}  // namespace tokenmill
