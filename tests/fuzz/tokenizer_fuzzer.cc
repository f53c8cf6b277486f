// The tokenizers against arbitrary text and token ids: SentencePiece (the default
// model's Gemma vocabulary), byte-level BPE (the Llama 3 fixture vocabulary) and WordPiece
// (all-MiniLM-L6-v2's, converted by scripts/setup). Input: one byte of options (bit 4:
// WordPiece, else bit 0: BPE or SentencePiece; bits 1-3: add_special, parse_special,
// render_special), then text; the same bytes read as token ids drive the
// incremental decoder. Checked beyond memory safety: every id encode() returns is in
// the vocabulary, and the incremental decoder's output is valid UTF-8 and, whenever
// decode() of the same ids is, equal to it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "gguf/gguf_file.h"
#include "tokenizer/incremental_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

using namespace tokenmill;

namespace {

struct Loaded {
  std::unique_ptr<gguf::File> file;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
};

Loaded load(const std::string& path) {
  Result<gguf::File> file = gguf::File::open(path);
  if (!file.ok()) {
    std::fprintf(stderr, "fuzz_tokenizer: cannot open %s: %s\n", path.c_str(), file.status().to_string().c_str());
    std::abort();
  }
  Loaded loaded{std::make_unique<gguf::File>(std::move(file).value()), nullptr};
  auto tokenizer = tokenizer::Tokenizer::from_gguf(*loaded.file);
  if (!tokenizer.ok()) std::abort();
  loaded.tokenizer = std::move(tokenizer).value();
  return loaded;
}

const Loaded& spm() {
  static const Loaded loaded = load(fuzz::default_model_path());
  return loaded;
}
const Loaded& wordpiece() {
  static const Loaded loaded = load(std::string(TOKENMILL_SOURCE_DIR) + "/models/all-minilm-l6-v2-f16.gguf");
  return loaded;
}
const Loaded& bpe() {
  static const Loaded loaded = load(std::string(TOKENMILL_SOURCE_DIR) + "/tests/fixtures/tokenizer/llama3_bpe_32k.gguf");
  return loaded;
}

bool valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const int n = tokenizer::valid_utf8_sequence_at(text, i);
    if (n <= 0) return false;
    i += static_cast<size_t>(n);
  }
  return true;
}

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_tokenizer: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spm();
  bpe();
  wordpiece();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t options = data[0];
  const tokenizer::Tokenizer& tok = *((options & 16) ? wordpiece() : (options & 1) ? bpe() : spm()).tokenizer;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  const std::vector<int32_t> ids = tok.encode(text, (options & 2) != 0, (options & 4) != 0);
  for (int32_t id : ids) check(id >= 0 && id < tok.n_vocab(), "encode returned an id outside the vocabulary");

  // The same bytes as ids (3 bytes each, any value: decode skips ids outside the vocabulary
  // but the incremental decoder gets only valid ones).
  std::vector<int32_t> as_ids;
  for (size_t i = 1; i + 3 <= size; i += 3) {
    const int32_t id = static_cast<int32_t>((data[i] | data[i + 1] << 8 | data[i + 2] << 16) % tok.n_vocab());
    as_ids.push_back(id);
  }
  const bool render_special = (options & 8) != 0;
  tokenizer::IncrementalDecoder decoder(tok, render_special);
  std::string streamed;
  for (int32_t id : as_ids) streamed += decoder.push(id);
  streamed += decoder.flush();
  check(valid_utf8(streamed), "the incremental decoder wrote invalid UTF-8");
  const std::string whole = tok.decode(as_ids, render_special);
  if (valid_utf8(whole)) check(streamed == whole, "incremental and whole decoding differ on valid UTF-8");
  return 0;
}
