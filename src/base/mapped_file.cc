#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tokenmill {

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), path_(std::move(other.path_)) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = other.data_;
    size_ = other.size_;
    path_ = std::move(other.path_);
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() {
  if (data_ != nullptr && size_ > 0) munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

Result<MappedFile> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    std::string msg = "cannot open '" + path + "': " + std::strerror(err);
    return err == ENOENT ? not_found(msg) : io_error(msg);
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    std::string msg = "cannot stat '" + path + "': " + std::strerror(errno);
    ::close(fd);
    return io_error(msg);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument("'" + path + "' is not a regular file");
  }
  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ > 0) {
    void* p = mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      std::string msg = "cannot mmap '" + path + "': " + std::strerror(errno);
      ::close(fd);
      file.size_ = 0;
      return io_error(msg);
    }
    file.data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  return file;
}

void MappedFile::release(const uint8_t* p, size_t n) const {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (end <= begin || begin < reinterpret_cast<uintptr_t>(data_) ||
      end > reinterpret_cast<uintptr_t>(data_) + size_) {
    return;
  }
  madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void MappedFile::prefetch() const {
  if (size_ == 0) return;
  madvise(const_cast<uint8_t*>(data_), size_, MADV_WILLNEED);
  volatile uint8_t sink = 0;
  for (size_t i = 0; i < size_; i += 4096) sink = sink + data_[i];
  (void)sink;
}

}  // namespace tokenmill
