#include "base/line_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace tokenmill {

namespace {

Status errno_error(const std::string& what, const std::string& path) {
  return io_error(what + " '" + path + "': " + std::strerror(errno));
}

}  // namespace

Result<LineFile> LineFile::open(const std::string& path, std::vector<std::string>* existing,
                                std::chrono::milliseconds sync_interval) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error("cannot open", path);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument("'" + path + "' is not a regular file");
  }
  std::string contents;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = errno_error("cannot read", path);
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    contents.append(buffer, static_cast<size_t>(n));
  }
  const size_t last_newline = contents.rfind('\n');
  const off_t whole = last_newline == std::string::npos ? 0 : static_cast<off_t>(last_newline + 1);
  if (whole != static_cast<off_t>(contents.size())) {
    if (::ftruncate(fd, whole) != 0 || ::fsync(fd) != 0) {
      Status s = errno_error("cannot cut the partial last line of", path);
      ::close(fd);
      return s;
    }
  }
  if (existing != nullptr) {
    size_t begin = 0;
    while (begin < static_cast<size_t>(whole)) {
      const size_t end = contents.find('\n', begin);
      existing->push_back(contents.substr(begin, end - begin));
      begin = end + 1;
    }
  }
  if (::lseek(fd, whole, SEEK_SET) < 0) {
    Status s = errno_error("cannot seek in", path);
    ::close(fd);
    return s;
  }
  return LineFile(path, fd, whole, sync_interval);
}

LineFile::LineFile(std::string path, int fd, off_t size, std::chrono::milliseconds sync_interval)
    : path_(std::move(path)), fd_(fd), size_(size), sync_interval_(sync_interval),
      last_sync_(std::chrono::steady_clock::now()) {}

LineFile::LineFile(LineFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), size_(other.size_),
      sync_interval_(other.sync_interval_), last_sync_(other.last_sync_), dirty_(other.dirty_) {}

LineFile& LineFile::operator=(LineFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) {
      (void)sync();
      ::close(fd_);
    }
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    sync_interval_ = other.sync_interval_;
    last_sync_ = other.last_sync_;
    dirty_ = other.dirty_;
  }
  return *this;
}

LineFile::~LineFile() {
  if (fd_ < 0) return;
  (void)sync();
  ::close(fd_);
}

Status LineFile::append(std::string_view line) {
  std::string record;
  record.reserve(line.size() + 1);
  record.append(line);
  record.push_back('\n');
  size_t written = 0;
  while (written < record.size()) {
    const ssize_t n = ::write(fd_, record.data() + written, record.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status s = errno_error("cannot write to", path_);
      // Undo the part that went out, so that the file keeps whole lines only.
      if (::ftruncate(fd_, size_) != 0 || ::lseek(fd_, size_, SEEK_SET) < 0) {
        return io_error(s.message() + " (and cannot cut the partial line: the next open will)");
      }
      return s;
    }
    written += static_cast<size_t>(n);
  }
  size_ += static_cast<off_t>(record.size());
  dirty_ = true;
  if (std::chrono::steady_clock::now() - last_sync_ >= sync_interval_) return sync();
  return Status();
}

Status LineFile::sync() {
  if (!dirty_) return Status();
  if (::fdatasync(fd_) != 0) return errno_error("cannot sync", path_);
  dirty_ = false;
  last_sync_ = std::chrono::steady_clock::now();
  return Status();
}

}  // namespace tokenmill
