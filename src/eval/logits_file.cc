#include "eval/logits_file.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

namespace tokenmill::eval {

namespace {

constexpr char kMagic[4] = {'T', 'M', 'L', 'G'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 4 + 7 * sizeof(uint32_t);  // magic, then 7 u32 fields
constexpr uint32_t kMaxTopK = 1u << 20;

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

uint32_t get_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

LogitsFileWriter::~LogitsFileWriter() {
  if (file_) {
    std::fclose(file_);
    std::remove(tmp_path_.c_str());
  }
}

Result<std::unique_ptr<LogitsFileWriter>> LogitsFileWriter::create(const std::string& path,
                                                                  const LogitsFileHeader& header,
                                                                  std::span<const int32_t> window_tokens) {
  if (window_tokens.size() != static_cast<size_t>(header.n_windows) * header.n_ctx) {
    return invalid_argument("logits file: window tokens do not match the header");
  }
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return io_error("cannot create '" + tmp + "': " + std::strerror(errno));
  std::unique_ptr<LogitsFileWriter> writer(new LogitsFileWriter(path, tmp, f, header));
  std::vector<uint8_t> head(kMagic, kMagic + 4);
  for (uint32_t v : {kVersion, header.n_vocab, header.n_ctx, header.first_scored, header.n_windows, header.top_k, 0u}) {
    put_u32(head, v);
  }
  if (std::fwrite(head.data(), 1, head.size(), f) != head.size() ||
      std::fwrite(window_tokens.data(), sizeof(int32_t), window_tokens.size(), f) != window_tokens.size()) {
    return io_error("cannot write '" + tmp + "': " + std::strerror(errno));
  }
  return writer;
}

Status LogitsFileWriter::add(std::span<const float> logits, int32_t target) {
  const double lse = log_sum_exp(logits);
  const std::vector<int32_t> top = top_k_tokens(logits, static_cast<int32_t>(header_.top_k));
  record_.resize(header_.record_bytes());
  uint8_t* p = record_.data();
  const float target_log_prob = static_cast<float>(logits[target] - lse);
  std::memcpy(p, &target_log_prob, sizeof(float));
  p += sizeof(float);
  std::memcpy(p, top.data(), top.size() * sizeof(int32_t));
  p += header_.top_k * sizeof(int32_t);
  for (int32_t id : top) {
    const float lp = static_cast<float>(logits[id] - lse);
    std::memcpy(p, &lp, sizeof(float));
    p += sizeof(float);
  }
  if (std::fwrite(record_.data(), 1, record_.size(), file_) != record_.size()) {
    return io_error("cannot write '" + tmp_path_ + "': " + std::strerror(errno));
  }
  ++n_written_;
  return {};
}

Status LogitsFileWriter::finish() {
  if (n_written_ != header_.n_scored()) {
    return internal_error("logits file: " + std::to_string(n_written_) + " records written, header promises " +
                          std::to_string(header_.n_scored()));
  }
  const bool ok = std::fflush(file_) == 0 && std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok) {
    std::remove(tmp_path_.c_str());
    return io_error("cannot write '" + tmp_path_ + "'");
  }
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    std::remove(tmp_path_.c_str());
    return io_error("cannot rename '" + tmp_path_ + "' to '" + path_ + "': " + std::strerror(errno));
  }
  return {};
}

Result<LogitsFile> LogitsFile::read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot open logits file '" + path + "': " + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string what = "'" + path + "' is not a tokenmill logits file: ";
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, 4) != 0) {
    return corrupt_data(what + "bad magic (expected \"TMLG\")");
  }
  const uint8_t* p = bytes.data() + 4;
  if (get_u32(p) != kVersion) return unsupported(what + "version " + std::to_string(get_u32(p)) + ", expected 1");
  LogitsFile file;
  LogitsFileHeader& h = file.header_;
  h.n_vocab = get_u32(p + 4);
  h.n_ctx = get_u32(p + 8);
  h.first_scored = get_u32(p + 12);
  h.n_windows = get_u32(p + 16);
  h.top_k = get_u32(p + 20);
  if (h.n_vocab == 0 || h.n_ctx < 2 || h.first_scored >= h.n_ctx - 1 || h.top_k == 0 || h.top_k > kMaxTopK ||
      h.top_k > h.n_vocab || h.n_windows == 0) {
    return corrupt_data(what + "header fields out of range");
  }
  const uint64_t n_tokens = static_cast<uint64_t>(h.n_windows) * h.n_ctx;
  const uint64_t expected = kHeaderBytes + n_tokens * sizeof(int32_t) + h.n_scored() * h.record_bytes();
  if (bytes.size() != expected) {
    return corrupt_data(what + std::to_string(bytes.size()) + " bytes, the header implies " +
                        std::to_string(expected) + " (truncated?)");
  }
  file.tokens_.resize(n_tokens);
  std::memcpy(file.tokens_.data(), bytes.data() + kHeaderBytes, n_tokens * sizeof(int32_t));
  file.records_.assign(bytes.begin() + kHeaderBytes + n_tokens * sizeof(int32_t), bytes.end());
  for (uint64_t i = 0; i < h.n_scored(); ++i) {
    const ReferenceToken r = file.record(i);
    for (int32_t id : r.top_ids) {
      if (id < 0 || static_cast<uint32_t>(id) >= h.n_vocab) return corrupt_data(what + "token id out of range");
    }
    if (!std::isfinite(r.target_log_prob)) return corrupt_data(what + "non-finite log-probability");
  }
  return file;
}

ReferenceToken LogitsFile::record(uint64_t i) const {
  const uint8_t* p = records_.data() + i * header_.record_bytes();
  ReferenceToken r;
  std::memcpy(&r.target_log_prob, p, sizeof(float));
  r.top_ids = {reinterpret_cast<const int32_t*>(p + sizeof(float)), header_.top_k};
  r.top_log_probs = {reinterpret_cast<const float*>(p + sizeof(float) + header_.top_k * sizeof(int32_t)), header_.top_k};
  return r;
}

}  // namespace tokenmill::eval
