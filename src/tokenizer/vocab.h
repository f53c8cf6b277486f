// A tokenizer vocabulary as GGUF metadata describes it (tokenizer.ggml.*): the token
// strings with their scores and types, BPE merges, the special-token ids and the flags
// that say how text is prepared.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"

namespace tokenmill::tokenizer {

// tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,      // <bos>, <start_of_turn>: matched in text only when asked to
  kUserDefined = 4,  // added by the model's authors; always matched in text
  kUnused = 5,
  kByte = 6,  // <0xXX>, the fallback for bytes no other token covers
};

enum class VocabKind {
  kSentencePiece,  // tokenizer.ggml.model "llama": scores, U+2581 for space, byte tokens
  kByteLevelBpe,   // tokenizer.ggml.model "gpt2": merges over GPT-2 byte characters
  kWordPiece,      // tokenizer.ggml.model "bert": BERT's uncased WordPiece, U+2581 before words
};

struct TokenData {
  std::string text;  // as stored in the vocabulary (U+2581 or byte-level characters)
  float score = 0.0f;
  TokenType type = TokenType::kNormal;
};

inline constexpr int32_t kNoToken = -1;

// Lets text_to_id be searched with a string_view, without building a std::string.
struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

struct Vocab {
  VocabKind kind = VocabKind::kSentencePiece;
  std::string pre;  // tokenizer.ggml.pre: names the pre-tokenizer of a BPE vocabulary

  std::vector<TokenData> tokens;                      // [n_vocab]
  std::unordered_map<std::string, int32_t, TextHash, std::equal_to<>> text_to_id;  // a repeated text: its last id
  std::vector<std::string> merges;                    // BPE only: "left right", by rank

  int32_t bos_id = kNoToken;
  int32_t eos_id = kNoToken;
  int32_t eot_id = kNoToken;
  int32_t eom_id = kNoToken;
  int32_t unk_id = kNoToken;
  int32_t pad_id = kNoToken;

  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;  // SentencePiece: a space before text that starts a run

  int32_t n_tokens() const { return static_cast<int32_t>(tokens.size()); }
  bool contains(int32_t id) const { return id >= 0 && id < n_tokens(); }
  std::optional<int32_t> find(std::string_view text) const;
  // The vocabulary's token for one raw byte: <0xXX> for SentencePiece, the byte's
  // character for byte-level BPE; nullopt if the vocabulary lacks it.
  std::optional<int32_t> byte_token(uint8_t byte) const;
};

// Reads tokenizer.ggml.* from a GGUF file. Validates every array length and token id;
// a bad value yields a Status naming the key.
Result<Vocab> load_vocab(const gguf::File& file);

// Fills text_to_id from tokens and applies the fix-ups every loader does (empty token
// texts are renamed, end-of-turn markers are made control tokens). load_vocab calls it;
// tests that build a Vocab by hand call it too.
void finish_vocab(Vocab& vocab);

}  // namespace tokenmill::tokenizer
