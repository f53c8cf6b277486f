// The GGUF reader and everything that reads a parsed file's contents: the header,
// metadata of every type, tensor infos, then the model's hyperparameters and weights
// (bound by name and shape, repacked for the kernels), its vocabulary and tokenizer, and
// its chat template; a BERT encoder's weights, and one embedding through it. A malformed file must give a Status, never a crash, a read past
// the end or an allocation the file's size does not justify.
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "fuzz_input.h"
#include "gguf/gguf_file.h"
#include "model/bert_encoder.h"
#include "model/model.h"
#include "ops/cpu/cpu_backend.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

using namespace tokenmill;

namespace {
volatile size_t sink;  // keeps the reads above from being optimized away
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Result<gguf::File> parsed = gguf::File::parse(std::span<const uint8_t>(data, size));
  if (!parsed.ok()) return 0;
  auto file = std::make_shared<const gguf::File>(std::move(parsed).value());

  // Every typed lookup on every key, and every tensor's bytes.
  size_t touched = 0;
  for (const gguf::KeyValue& kv : file->metadata()) {
    touched += file->get_string_or(kv.key, "").size();
    touched += static_cast<size_t>(file->get_int_or(kv.key, 0));
    touched += file->get_bool_or(kv.key, false);
    (void)file->get_double_or(kv.key, 0.0);
    if (const gguf::Array* array = file->get_array(kv.key)) touched += array->items.size();
  }
  for (const gguf::TensorInfo& info : file->tensors()) {
    const std::span<const uint8_t> bytes = file->tensor_data(info);
    if (!bytes.empty()) touched += bytes.front() + bytes.back();
  }

  (void)tokenizer::Tokenizer::from_gguf(*file);
  if (auto chat_template = tokenizer::chat_template_for_model(*file); chat_template.ok()) {
    (void)chat_template->render({{"user", "hi"}}, true, "<bos>", "<eos>");
  }
  model::LoadOptions load;
  load.n_threads = 1;
  load.prefetch = false;
  (void)model::load_model(file, load);
  if (auto encoder = model::BertEncoder::load(file, std::make_unique<ops::CpuBackend>(1)); encoder.ok()) {
    const model::BertConfig& c = (*encoder)->config();
    std::vector<std::vector<int32_t>> inputs = {{0}, std::vector<int32_t>(std::min(c.max_positions, 3), c.n_vocab - 1)};
    std::vector<std::vector<float>> vectors;
    (*encoder)->embed(inputs, vectors);
    touched += vectors.size();
  }
  sink = touched;
  return 0;
}
