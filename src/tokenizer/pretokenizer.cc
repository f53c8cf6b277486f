#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace tokenmill::tokenizer {

namespace {

// The families' published split expressions. The case-insensitive contraction group
// "(?i:'s|'t|...)" is spelled out letter by letter: with Unicode case folding, (?i) would
// also match "ſ" (long s) and the Kelvin sign, which llama.cpp does not.
constexpr std::string_view kContractions =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";

std::string llama3_pattern() {
  return std::string(kContractions) +
         R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
}

// Qwen 2 differs from Llama 3 only in splitting numbers into single digits.
std::string qwen2_pattern() {
  return std::string(kContractions) +
         R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
}

// o200k (GPT-4o, gpt-oss): cased words (an upper-case run then lower-case letters, or the
// other way), contractions after a word, numbers of up to three digits, punctuation runs
// taking trailing newlines and slashes.
std::string gpt4o_pattern() {
  const std::string contractions = std::string(kContractions) + "?";
  return R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)" + contractions +
         R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)" + contractions +
         R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
}

constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

}  // namespace

Result<PreTokenizerConfig> pretokenizer_config(std::string_view pre) {
  PreTokenizerConfig config;
  if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3" ||
      pre == "pixtral") {
    config.name = "llama3";
    config.patterns = {llama3_pattern()};
    config.ignore_merges = true;
    config.add_bos_by_default = true;
  } else if (pre == "qwen2" || pre == "deepseek-r1-qwen" || pre == "stablelm2") {
    config.name = "qwen2";
    config.patterns = {qwen2_pattern()};
  } else if (pre == "gpt-4o" || pre == "o200k") {
    config.name = "gpt-4o";
    config.patterns = {gpt4o_pattern()};
    config.ignore_merges = true;  // tiktoken's vocabularies: a piece that is a token stays whole
  } else if (pre == "gpt2" || pre == "gpt-2" || pre == "phi-2" || pre == "mpt" || pre == "olmo") {
    config.name = "gpt2";
    config.patterns = {std::string(kGpt2Pattern)};
  } else if (pre == "starcoder" || pre == "smollm" || pre == "refact" || pre == "command-r") {
    config.name = "starcoder";
    config.patterns = {R"(\p{N})", std::string(kGpt2Pattern)};
  } else if (pre == "default" || pre.empty()) {
    // What llama.cpp falls back to for a BPE vocabulary without a known pre-tokenizer.
    config.name = "default";
    config.patterns = {R"([\p{P}\$\+<=>\^~\|]+)", std::string(kGpt2Pattern), R"(\p{N}+)",
                       "[0-9][0-9][0-9]"};
  } else {
    return unsupported("pre-tokenizer '" + std::string(pre) +
                       "' (supported: llama3/llama-bpe, qwen2, gpt-4o, gpt2, starcoder, default)");
  }
  return config;
}

struct PreTokenizer::Pattern {
  pcre2_code* code = nullptr;
  ~Pattern() { pcre2_code_free(code); }
};

PreTokenizer::~PreTokenizer() = default;

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::create(const PreTokenizerConfig& config) {
  std::unique_ptr<PreTokenizer> pre(new PreTokenizer());
  for (const std::string& source : config.patterns) {
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    // MATCH_INVALID_UTF: text with broken UTF-8 still splits (no class matches the bad
    // bytes, so they land between matches) instead of failing.
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF,
                                     &error_code, &error_offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error_code, message, sizeof message);
      return internal_error("pre-tokenizer pattern does not compile at " +
                            std::to_string(error_offset) + ": " +
                            reinterpret_cast<const char*>(message));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional speed-up; falls back if absent
    auto pattern = std::make_unique<Pattern>();
    pattern->code = code;
    pre->patterns_.push_back(std::move(pattern));
  }
  return pre;
}

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (!text.empty()) pieces.push_back(text);
  for (const auto& pattern : patterns_) {
    pcre2_match_data* match = pcre2_match_data_create_from_pattern(pattern->code, nullptr);
    std::vector<std::string_view> next;
    for (std::string_view piece : pieces) {
      const auto subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
      size_t done = 0;  // piece[0, done) has been emitted
      size_t start = 0;
      while (start < piece.size()) {
        const int rc = pcre2_match(pattern->code, subject, piece.size(), start, 0, match, nullptr);
        if (rc < 0) break;  // no more matches (or an error: keep the rest whole)
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
        const size_t begin = ovector[0], end = ovector[1];
        if (begin > done) next.push_back(piece.substr(done, begin - done));
        if (end > begin) {
          next.push_back(piece.substr(begin, end - begin));
          done = end;
          start = end;
        } else {
          start = begin + 1;  // an empty match: step past it (no pattern here produces one)
        }
      }
      if (done < piece.size()) next.push_back(piece.substr(done));
    }
    pcre2_match_data_free(match);
    pieces = std::move(next);
  }
  return pieces;
}

}  // namespace tokenmill::tokenizer
