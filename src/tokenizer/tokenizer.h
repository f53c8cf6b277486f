// Text <-> token ids for a model, built from its GGUF vocabulary. Matches llama.cpp's
// tokenization for SentencePiece ("llama") and byte-level BPE ("gpt2") vocabularies, and
// Hugging Face's BERT tokenizer for WordPiece ("bert") ones.
//
//   encode:  text -> split on special tokens -> per plain stretch: SentencePiece merges
//            (spaces as U+2581) or pre-tokenizer + byte-level BPE -> ids
//   decode:  ids -> each token's bytes (U+2581 -> space, <0xXX> -> the byte, byte-level
//            characters -> bytes; control tokens empty unless rendered) -> concatenated
//
// Thread-safety: immutable after creation; every method may run on many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/vocab.h"

namespace tokenmill::tokenizer {

class SpmTokenizer;
class BpeTokenizer;
class WordPieceTokenizer;

class Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> from_gguf(const gguf::File& file);
  static Result<std::unique_ptr<Tokenizer>> from_vocab(Vocab vocab);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // add_special: add BOS / EOS where the vocabulary asks for them (add_bos(), add_eos()).
  // parse_special: text like "<start_of_turn>" becomes its control token; when false it
  // is tokenized as plain characters. User-defined tokens are matched either way.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes one token stands for; may be part of a UTF-8 character (byte tokens) or
  // empty (control tokens unless render_special; unused and undefined tokens always).
  // REQUIRES: 0 <= id < n_vocab().
  const std::string& token_piece(int32_t id, bool render_special) const;

  // The concatenated pieces; ids outside the vocabulary are skipped. With
  // add_space_prefix, the space the encoder put before the text is removed again.
  std::string decode(std::span<const int32_t> ids, bool render_special) const;

  int32_t n_vocab() const { return vocab_.n_tokens(); }
  int32_t bos_id() const { return vocab_.bos_id; }  // kNoToken if none
  int32_t eos_id() const { return vocab_.eos_id; }
  bool add_bos() const { return vocab_.add_bos; }
  bool add_eos() const { return vocab_.add_eos; }
  // Decoding drops the space the first text token's piece starts with: SentencePiece's
  // space prefix, WordPiece's space before each word.
  bool strips_first_space() const { return vocab_.add_space_prefix || vocab_.kind == VocabKind::kWordPiece; }
  const Vocab& vocab() const { return vocab_; }

  // True for EOS, EOT, EOM and the known end-of-turn markers (<end_of_turn>,
  // <|eot_id|>, <|im_end|> ...).
  // For a harmony vocabulary, <|return|> and <|call|> but not <|end|> (a message's end).
  bool is_end_of_generation(int32_t id) const;
  bool is_control(int32_t id) const;
  // Whether the vocabulary is gpt-oss's harmony format (<|channel|>, <|message|>,
  // <|return|>): its structural tokens (<|start|>, <|channel|>, <|message|>, <|end|>,
  // <|constrain|>) are then rendered in decoded text as their text.
  bool speaks_harmony() const { return speaks_harmony_; }

  // The id of the token whose vocabulary text is exactly text.
  std::optional<int32_t> find_token(std::string_view text) const { return vocab_.find(text); }

 private:
  explicit Tokenizer(Vocab vocab);
  void build_pieces();

  Vocab vocab_;
  SpecialTokenSplitter splitter_;
  std::unique_ptr<SpmTokenizer> spm_;  // exactly one of spm_ / bpe_ / wordpiece_ is set
  std::unique_ptr<BpeTokenizer> bpe_;
  std::unique_ptr<WordPieceTokenizer> wordpiece_;
  std::vector<std::string> pieces_;        // [n_vocab] bytes of each token, rendered
  std::vector<bool> hidden_unless_special_; // [n_vocab] control / unknown tokens
  std::vector<bool> end_of_generation_;     // [n_vocab]
  bool speaks_harmony_ = false;
};

}  // namespace tokenmill::tokenizer
