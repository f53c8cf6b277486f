// Pre-tokenization for byte-level BPE: a model family's regular expressions cut text into
// words before merges run, so no merge ever crosses a word boundary. Matching uses PCRE2
// in UTF + Unicode-property mode (\p{L}, \p{N} and \s mean what Unicode says).
//
// Thread-safety: a PreTokenizer is immutable after creation; split() may be called from
// many threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tokenmill::tokenizer {

// What a tokenizer.ggml.pre name implies.
struct PreTokenizerConfig {
  std::string name;                  // canonical: "llama3", "qwen2", "gpt2", "default"
  std::vector<std::string> patterns; // applied in order, each to the pieces of the last
  bool ignore_merges = false;        // a word that is already a token is not merged
  bool add_bos_by_default = false;   // the family starts prompts with BOS
};

// Unknown names are an error: a wrong pre-tokenizer silently degrades a model.
Result<PreTokenizerConfig> pretokenizer_config(std::string_view pre);

class PreTokenizer {
 public:
  static Result<std::unique_ptr<PreTokenizer>> create(const PreTokenizerConfig& config);
  ~PreTokenizer();

  // Splits text into words. Matches and the text between matches both become words
  // (HF's "Isolated" behavior); the words concatenate back to text exactly.
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  struct Pattern;
  PreTokenizer() = default;
  std::vector<std::unique_ptr<Pattern>> patterns_;
};

}  // namespace tokenmill::tokenizer
