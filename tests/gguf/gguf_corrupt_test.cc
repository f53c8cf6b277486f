// The GGUF reader against hostile input: the corpus in tests/fixtures/gguf_corrupt/
// (written by tools/make_corrupt_gguf.py; manifest.json maps each file to a substring its
// error must contain), and seeded random mutations of a valid file. Under the ASan/UBSan
// build these also prove that no input reads out of bounds or overflows.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace tokenmill::gguf {
namespace {

const std::string kCorpusDir = std::string(TOKENMILL_FIXTURES_DIR) + "/gguf_corrupt";

// Reads the manifest: one flat JSON object of string -> string, as the generator writes
// it (json.dumps with ensure_ascii, so only \" and \\ escapes can occur).
std::map<std::string, std::string> read_manifest(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  std::vector<std::string> strings;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '"') continue;
    std::string s;
    for (++i; i < text.size() && text[i] != '"'; ++i) {
      if (text[i] == '\\' && i + 1 < text.size()) ++i;
      s += text[i];
    }
    strings.push_back(std::move(s));
  }
  std::map<std::string, std::string> manifest;
  for (size_t i = 0; i + 1 < strings.size(); i += 2) manifest[strings[i]] = strings[i + 1];
  return manifest;
}

TEST(GgufCorrupt, CorpusMatchesManifest) {
  const auto manifest = read_manifest(kCorpusDir + "/manifest.json");
  ASSERT_GE(manifest.size(), 24u) << "missing or unreadable " << kCorpusDir << "/manifest.json";
  size_t n_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kCorpusDir)) {
    if (entry.path().extension() != ".gguf") continue;
    ++n_files;
    EXPECT_TRUE(manifest.count(entry.path().filename().string()))
        << entry.path() << " has no manifest entry; rerun tools/make_corrupt_gguf.py";
  }
  EXPECT_EQ(n_files, manifest.size());
}

TEST(GgufCorrupt, EveryFileIsRejectedWithItsMessage) {
  const auto manifest = read_manifest(kCorpusDir + "/manifest.json");
  ASSERT_FALSE(manifest.empty());
  for (const auto& [name, expected] : manifest) {
    SCOPED_TRACE(name);
    const std::string path = kCorpusDir + "/" + name;
    ASSERT_TRUE(std::filesystem::exists(path));
    auto file = File::open(path);
    ASSERT_FALSE(file.ok()) << "accepted a corrupt file";
    const Status& status = file.status();
    EXPECT_NE(status.message().find(expected), std::string::npos)
        << "message: " << status.message() << "\nexpected to contain: " << expected;
    // File::open names the path so a user knows which file is broken.
    EXPECT_NE(status.message().find(name), std::string::npos) << status.message();
    EXPECT_TRUE(status.code() == ErrorCode::kCorruptData || status.code() == ErrorCode::kUnsupported)
        << error_code_name(status.code());
  }
}

TEST(GgufCorrupt, CorpusFilesAreRejectedFromMemoryToo) {
  // File::parse is the fuzzing entry point; it must agree with File::open.
  const auto manifest = read_manifest(kCorpusDir + "/manifest.json");
  for (const auto& [name, expected] : manifest) {
    SCOPED_TRACE(name);
    std::ifstream in(kCorpusDir + "/" + name, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto file = File::parse(bytes);
    ASSERT_FALSE(file.ok());
    EXPECT_NE(file.status().message().find(expected), std::string::npos) << file.status().message();
  }
}

// A small file that exercises every part of the format: scalars, strings, nested and
// string arrays, several tensors with padding between them.
std::vector<uint8_t> small_valid_file() {
  Writer w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.context_length", 128);
  w.set_f32("llama.rope.freq_base", 10000.0f);
  w.set_bool("flag", true);
  w.set("i64", Value(int64_t{-5}));
  w.set_strings("tokenizer.ggml.tokens", {"<s>", "</s>", "a", "bc"});
  w.set("nested", make_array(ValueType::kArray, std::vector<Value>{make_array(ValueType::kInt16, std::vector<int16_t>{1, 2}),
                                                                   make_array(ValueType::kInt16, std::vector<int16_t>{})}));
  std::vector<uint8_t> f32_data(3 * 2 * 4, 0x11);
  std::vector<uint8_t> q4_data(2 * 18, 0x22);
  std::vector<uint8_t> f16_data(5 * 2, 0x33);
  EXPECT_TRUE(w.add_tensor("a", TensorType::kF32, {3, 2}, f32_data).ok());
  EXPECT_TRUE(w.add_tensor("b", TensorType::kQ4_0, {32, 2}, q4_data).ok());
  EXPECT_TRUE(w.add_tensor("c", TensorType::kF16, {5}, f16_data).ok());
  auto bytes = w.to_bytes();
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? std::move(bytes).value() : std::vector<uint8_t>{};
}

// Touches everything a parsed file exposes, so a sanitizer sees any bad span.
uint64_t touch(const File& file) {
  uint64_t sum = file.metadata().size();
  for (const KeyValue& kv : file.metadata()) sum += kv.value.to_display_string().size();
  for (const TensorInfo& t : file.tensors()) {
    for (uint8_t b : file.tensor_data(t)) sum += b;
    sum += static_cast<uint64_t>(t.n_elements() + t.n_rows());
  }
  return sum;
}

TEST(GgufCorrupt, SeededMutationsNeverCrash) {
  const std::vector<uint8_t> valid = small_valid_file();
  ASSERT_FALSE(valid.empty());
  auto parsed = File::parse(valid);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();

  std::mt19937_64 rng(20240611);
  auto uniform = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  // Values that tend to hit edges when written over a count, length or offset.
  const uint64_t interesting[] = {0, 1, 2, 3, 4, 7, 8, 31, 32, 33, 255, 256, 0x7fffffff, 0xffffffff,
                                  uint64_t{1} << 32, uint64_t{1} << 62, uint64_t{1} << 63, ~uint64_t{0}};
  const auto start = std::chrono::steady_clock::now();
  int n_ok = 0, n_rejected = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    std::vector<uint8_t> bytes = valid;
    const int n_mutations = 1 + static_cast<int>(uniform(4));
    for (int m = 0; m < n_mutations && !bytes.empty(); ++m) {
      switch (uniform(6)) {
        case 0:  // flip one bit
          bytes[uniform(bytes.size())] ^= static_cast<uint8_t>(1u << uniform(8));
          break;
        case 1:  // overwrite one byte
          bytes[uniform(bytes.size())] = static_cast<uint8_t>(rng());
          break;
        case 2:  // truncate
          bytes.resize(uniform(bytes.size()));
          break;
        case 3: {  // insert a few bytes
          const size_t at = uniform(bytes.size() + 1);
          const size_t n = 1 + uniform(8);
          std::vector<uint8_t> inserted(n);
          for (uint8_t& b : inserted) b = static_cast<uint8_t>(rng());
          bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at), inserted.begin(), inserted.end());
          break;
        }
        case 4: {  // erase a few bytes
          const size_t at = uniform(bytes.size());
          const size_t n = std::min(bytes.size() - at, 1 + uniform(8));
          bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                      bytes.begin() + static_cast<std::ptrdiff_t>(at + n));
          break;
        }
        default: {  // write an edge value over 4 or 8 bytes
          const uint64_t v = interesting[uniform(std::size(interesting))];
          const size_t width = uniform(2) ? 8 : 4;
          if (bytes.size() < width) break;
          const size_t at = uniform(bytes.size() - width + 1);
          for (size_t i = 0; i < width; ++i) bytes[at + i] = static_cast<uint8_t>(v >> (8 * i));
          break;
        }
      }
    }
    // Parse from an exactly-sized heap copy so ASan catches a read one past the end.
    const std::vector<uint8_t> exact(bytes.begin(), bytes.end());
    auto file = File::parse(exact);
    if (file.ok()) {
      ++n_ok;
      touch(*file);
    } else {
      ++n_rejected;
      EXPECT_FALSE(file.status().message().empty());
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Both outcomes must occur, or the mutations are not reaching the parser's checks.
  EXPECT_GT(n_ok, 0);
  EXPECT_GT(n_rejected, 1000);
  RecordProperty("accepted", n_ok);
  RecordProperty("rejected", n_rejected);
  std::printf("mutations: %d accepted, %d rejected in %.2f s\n", n_ok, n_rejected, seconds);
}

}  // namespace
}  // namespace tokenmill::gguf
