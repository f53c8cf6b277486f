// A read-only memory-mapped file. Move-only; unmaps on destruction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"

namespace tokenmill {

class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // Maps the whole file. An empty file maps to an empty span.
  static Result<MappedFile> open(const std::string& path);

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

  // Asks the kernel to read the whole mapping in now (MADV_WILLNEED + touching pages),
  // so decode never waits on page faults.
  void prefetch() const;

  // Drops the whole pages inside [p, p + n) (a range of this mapping) from this
  // process's memory; reading them again faults them back in from the file. For data
  // that was copied elsewhere at load, so that it is not resident twice.
  void release(const uint8_t* p, size_t n) const;

 private:
  void reset();

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace tokenmill
