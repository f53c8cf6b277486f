// The converter's readers of untrusted Hugging Face files: a safetensors file (header
// length, JSON header, every tensor's range checked against its dtype and shape, no
// overlaps) and, on the same bytes, config.json and a SentencePiece tokenizer.model. A malformed input must give
// a Status, never a crash, a read past the end or an allocation the input does not justify.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "convert/hf_config.h"
#include "convert/safetensors.h"
#include "convert/sentencepiece_model.h"

using namespace tokenmill;

namespace {
volatile size_t sink;  // keeps the reads below from being optimized away
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  size_t touched = 0;
  auto file = convert::SafetensorsFile::parse(std::span<const uint8_t>(data, size), "fuzz.safetensors");
  if (file.ok()) {
    for (const convert::SafeTensor& t : file->tensors()) {
      if (auto values = convert::to_f32(t); values.ok() && !values->empty()) touched += values->size();
      if (!t.data.empty()) touched += t.data.front() + t.data.back();
    }
  }
  auto config = convert::parse_hf_config(std::string(reinterpret_cast<const char*>(data), size), "config.json");
  if (config.ok()) touched += static_cast<size_t>(config->n_layers);
  auto spm = convert::parse_sentencepiece_model(std::span<const uint8_t>(data, size), "tokenizer.model");
  if (spm.ok()) touched += spm->pieces.size();
  sink = touched;
  return 0;
}
