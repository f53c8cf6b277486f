// The reference-logits file of `tokenmill perplexity --save-logits` / `--kl-base`: what
// a later run needs to compare its distributions with this one's, token by token, without
// storing 262,144 floats per token.
//
// Layout (little-endian):
//   header   char magic[4] = "TMLG" | u32 version = 1 | u32 n_vocab | u32 n_ctx |
//            u32 first_scored | u32 n_windows | u32 top_k | u32 reserved = 0
//   tokens   i32 [n_windows * n_ctx]   every window as it was run (BOS included), so a
//                                      comparison can check it scores the same tokens
//   records  one per scored token, in window order, n_windows * (n_ctx - 1 - first_scored):
//            f32 target_log_prob | i32 top_ids[top_k] | f32 top_log_probs[top_k]
// top ids are the most probable first. With top_k = 1024 a record is 8 KiB.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "eval/token_stats.h"

namespace tokenmill::eval {

struct LogitsFileHeader {
  uint32_t n_vocab = 0;
  uint32_t n_ctx = 0;
  uint32_t first_scored = 0;
  uint32_t n_windows = 0;
  uint32_t top_k = 0;

  uint64_t n_scored() const { return static_cast<uint64_t>(n_windows) * (n_ctx - 1 - first_scored); }
  size_t record_bytes() const { return sizeof(float) + top_k * (sizeof(int32_t) + sizeof(float)); }
};

// Streams a logits file to a temporary path and renames it into place on finish(); a
// writer destroyed before finish() removes the temporary file.
class LogitsFileWriter {
 public:
  ~LogitsFileWriter();
  static Result<std::unique_ptr<LogitsFileWriter>> create(const std::string& path, const LogitsFileHeader& header,
                                                          std::span<const int32_t> window_tokens);
  // Appends the record of one scored token from its logits row.
  Status add(std::span<const float> logits, int32_t target);
  Status finish();

 private:
  LogitsFileWriter(std::string path, std::string tmp_path, std::FILE* file, LogitsFileHeader header)
      : path_(std::move(path)), tmp_path_(std::move(tmp_path)), file_(file), header_(header) {}
  std::string path_;
  std::string tmp_path_;
  std::FILE* file_ = nullptr;
  LogitsFileHeader header_;
  uint64_t n_written_ = 0;
  std::vector<uint8_t> record_;
};

// A whole logits file in memory, validated.
class LogitsFile {
 public:
  static Result<LogitsFile> read(const std::string& path);

  const LogitsFileHeader& header() const { return header_; }
  std::span<const int32_t> tokens() const { return tokens_; }
  // REQUIRES: i < header().n_scored().
  ReferenceToken record(uint64_t i) const;

 private:
  LogitsFileHeader header_;
  std::vector<int32_t> tokens_;
  std::vector<uint8_t> records_;  // [n_scored, record_bytes]
};

}  // namespace tokenmill::eval
