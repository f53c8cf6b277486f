// Errors as values. Untrusted input (files, requests) yields a Status that names what
// was expected and what was found; broken invariants are asserts, not Statuses.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace tokenmill {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,   // the caller passed something malformed
  kNotFound,          // a file, key, tensor or model that does not exist
  kIoError,           // the operating system refused (open, mmap, read, write)
  kCorruptData,       // a file's bytes contradict its own format
  kUnsupported,       // well-formed, but a feature we do not implement
  kResourceExhausted, // out of memory, blocks, slots
  kInternal,
  kAbandoned,         // stopped early because the caller asked it to (nothing is wrong)
};

const char* error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "corrupt data: tensor 'x' ends past the file" — for logs and one-line CLI errors.
  std::string to_string() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {ErrorCode::kInvalidArgument, std::move(m)}; }
inline Status not_found(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
inline Status io_error(std::string m) { return {ErrorCode::kIoError, std::move(m)}; }
inline Status corrupt_data(std::string m) { return {ErrorCode::kCorruptData, std::move(m)}; }
inline Status unsupported(std::string m) { return {ErrorCode::kUnsupported, std::move(m)}; }
inline Status resource_exhausted(std::string m) { return {ErrorCode::kResourceExhausted, std::move(m)}; }
inline Status internal_error(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }
inline Status abandoned(std::string m) { return {ErrorCode::kAbandoned, std::move(m)}; }

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : state_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(state_).ok() && "a Result built from a Status must be an error");
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(state_);
  }
  // REQUIRES: ok()
  T& value() & { assert(ok()); return std::get<T>(state_); }
  const T& value() const& { assert(ok()); return std::get<T>(state_); }
  T&& value() && { assert(ok()); return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace tokenmill

// Early return of a failed Status from a function that returns Status or Result<T>.
// Expands to a plain statement: it declares nothing the caller can see.
#define TM_RETURN_IF_ERROR(expr)                          \
  do {                                                    \
    ::tokenmill::Status tm_status_ = (expr);              \
    if (!tm_status_.ok()) return tm_status_;              \
  } while (0)
