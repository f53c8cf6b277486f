// SHA-256 digests (OpenSSL's libcrypto), as the store names blobs: "sha256-<64 hex>".
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tokenmill::store {

// An incremental digest. Not copyable.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t size);
  // The digest of everything given so far, as 64 lowercase hex digits; ends the digest.
  std::string hex();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The digest of a file's bytes from offset 0, added to digest (which may already hold a
// prefix, or be fresh). IoError when it cannot be read.
Status sha256_update_from_file(Sha256& digest, const std::string& path);
Result<std::string> sha256_file(const std::string& path);

// True for 64 hex digits (either case).
bool is_sha256_hex(std::string_view text);

}  // namespace tokenmill::store
