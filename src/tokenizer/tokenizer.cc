#include "tokenizer/tokenizer.h"

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/end_of_generation.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/wordpiece_tokenizer.h"
#include "tokenizer/unicode.h"

namespace tokenmill::tokenizer {

namespace {

const std::string kEmpty;

// "<0x41>" -> 0x41; nullopt if text is not in that form.
std::optional<uint8_t> parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return std::nullopt;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    value <<= 4;
    if (c >= '0' && c <= '9') value |= c - '0';
    else if (c >= 'A' && c <= 'F') value |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') value |= c - 'a' + 10;
    else return std::nullopt;
  }
  return static_cast<uint8_t>(value);
}

std::string unescape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    if (text.substr(pos, 3) == "\xE2\x96\x81") {
      out.push_back(' ');
      pos += 3;
    } else {
      out.push_back(text[pos++]);
    }
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const gguf::File& file) {
  Result<Vocab> vocab = load_vocab(file);
  if (!vocab.ok()) return vocab.status();
  return from_vocab(std::move(vocab).value());
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_vocab(Vocab vocab) {
  if (vocab.tokens.empty()) return invalid_argument("a vocabulary needs at least one token");
  if (vocab.add_bos && !vocab.contains(vocab.bos_id)) {
    return invalid_argument("the vocabulary adds BOS but has no BOS token");
  }
  if (vocab.add_eos && !vocab.contains(vocab.eos_id)) {
    return invalid_argument("the vocabulary adds EOS but has no EOS token");
  }
  if (vocab.text_to_id.empty()) finish_vocab(vocab);
  std::unique_ptr<Tokenizer> tokenizer(new Tokenizer(std::move(vocab)));
  if (tokenizer->vocab_.kind == VocabKind::kSentencePiece) {
    tokenizer->spm_ = std::make_unique<SpmTokenizer>(tokenizer->vocab_);
  } else if (tokenizer->vocab_.kind == VocabKind::kWordPiece) {
    if (!tokenizer->vocab_.contains(tokenizer->vocab_.unk_id)) {
      return invalid_argument("a WordPiece vocabulary needs an unknown token (tokenizer.ggml.unknown_token_id)");
    }
    tokenizer->wordpiece_ = std::make_unique<WordPieceTokenizer>(tokenizer->vocab_);
  } else {
    Result<std::unique_ptr<BpeTokenizer>> bpe = BpeTokenizer::create(tokenizer->vocab_);
    if (!bpe.ok()) return bpe.status();
    tokenizer->bpe_ = std::move(bpe).value();
  }
  tokenizer->build_pieces();
  return tokenizer;
}

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)), splitter_(vocab_) {}
Tokenizer::~Tokenizer() = default;

void Tokenizer::build_pieces() {
  const int32_t n = vocab_.n_tokens();
  pieces_.resize(n);
  hidden_unless_special_.assign(n, false);
  end_of_generation_.assign(n, false);
  for (int32_t id = 0; id < n; ++id) {
    const TokenData& token = vocab_.tokens[id];
    switch (token.type) {
      case TokenType::kControl:
      case TokenType::kUnknown:
        hidden_unless_special_[id] = true;
        pieces_[id] = token.text;
        break;
      case TokenType::kUserDefined:
        pieces_[id] = token.text;  // stored raw, never escaped
        break;
      case TokenType::kNormal:
        if (vocab_.kind == VocabKind::kWordPiece) {  // "▁word" starts a word; continuations join it
          pieces_[id] = unescape_spaces(token.text);
        } else {
          pieces_[id] = vocab_.kind == VocabKind::kSentencePiece ? unescape_spaces(token.text)
                                                                 : decode_byte_level(token.text);
        }
        break;
      case TokenType::kByte:
        if (const std::optional<uint8_t> byte = parse_byte_token(token.text)) {
          pieces_[id] = std::string(1, static_cast<char>(*byte));
        } else if (vocab_.kind == VocabKind::kByteLevelBpe) {
          pieces_[id] = decode_byte_level(token.text);
        }
        break;
      case TokenType::kUnused:
      case TokenType::kUndefined:
        break;  // never rendered
    }
    end_of_generation_[id] = is_end_of_generation_text(token.text);
  }
  for (int32_t id : {vocab_.eos_id, vocab_.eot_id, vocab_.eom_id}) {
    if (vocab_.contains(id)) end_of_generation_[id] = true;
  }
  // The harmony format (gpt-oss, tokenizer/harmony_format.h): <|end|> closes one message
  // of a turn, after which the model writes the next (<|start|>assistant...); the turn
  // ends at <|return|> or <|call|>. The structural tokens are part of the output's text,
  // where the server's parser reads the channels from them.
  speaks_harmony_ = vocab_.find("<|channel|>") && vocab_.find("<|message|>") && vocab_.find("<|return|>");
  if (speaks_harmony_) {
    for (std::string_view text : {"<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|constrain|>"}) {
      if (const std::optional<int32_t> id = vocab_.find(text)) {
        hidden_unless_special_[*id] = false;
        end_of_generation_[*id] = false;
      }
    }
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  std::vector<int32_t> ids;
  if (add_special && vocab_.add_bos) ids.push_back(vocab_.bos_id);
  // SentencePiece with add_space_prefix: plain text that follows the start or a special
  // token gets a leading space, as if it began a sentence.
  bool after_special = true;
  for (const Fragment& fragment : splitter_.split(text, parse_special)) {
    if (fragment.is_token()) {
      ids.push_back(fragment.token);
      after_special = true;
      continue;
    }
    const std::string_view plain = text.substr(fragment.begin, fragment.end - fragment.begin);
    if (spm_) {
      std::string prepared;
      if (vocab_.add_space_prefix && after_special) prepared.push_back(' ');
      prepared.append(plain);
      spm_->encode(escape_spaces(prepared), ids);
    } else if (wordpiece_) {
      wordpiece_->encode(plain, ids);
    } else {
      bpe_->encode(plain, ids);
    }
    after_special = false;
  }
  if (add_special && vocab_.add_eos) ids.push_back(vocab_.eos_id);
  return ids;
}

const std::string& Tokenizer::token_piece(int32_t id, bool render_special) const {
  if (!render_special && hidden_unless_special_[id]) return kEmpty;
  return pieces_[id];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string text;
  bool strip_space = strips_first_space();  // only ever from the first text token
  for (const int32_t id : ids) {
    if (!vocab_.contains(id)) continue;
    const std::string& piece = token_piece(id, render_special);
    if (strip_space && id == vocab_.bos_id) {  // BOS leaves the next token first
      text += piece;
      continue;
    }
    if (strip_space && !piece.empty() && piece[0] == ' ') {
      text.append(piece, 1);
    } else {
      text += piece;
    }
    strip_space = false;
  }
  return text;
}

bool Tokenizer::is_end_of_generation(int32_t id) const {
  return vocab_.contains(id) && end_of_generation_[id];
}

bool Tokenizer::is_control(int32_t id) const {
  return vocab_.contains(id) && vocab_.tokens[id].type == TokenType::kControl;
}

}  // namespace tokenmill::tokenizer
