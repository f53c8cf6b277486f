#include "tokenizer/vocab.h"

#include <cstdio>

#include "tokenizer/end_of_generation.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/unicode.h"

namespace tokenmill::tokenizer {

std::optional<int32_t> Vocab::find(std::string_view text) const {
  const auto it = text_to_id.find(text);
  if (it == text_to_id.end()) return std::nullopt;
  return it->second;
}

std::optional<int32_t> Vocab::byte_token(uint8_t byte) const {
  if (kind == VocabKind::kByteLevelBpe) return find(byte_to_byte_level(byte));
  char hex[8];
  std::snprintf(hex, sizeof hex, "<0x%02X>", byte);
  if (auto id = find(hex)) return id;
  // Some SentencePiece vocabularies spell a byte as itself.
  return find(std::string_view(reinterpret_cast<const char*>(&byte), 1));
}

void finish_vocab(Vocab& vocab) {
  vocab.text_to_id.clear();
  vocab.text_to_id.reserve(vocab.tokens.size());
  for (size_t i = 0; i < vocab.tokens.size(); ++i) {
    TokenData& token = vocab.tokens[i];
    // An empty token could never be matched or told apart; give it a visible name.
    if (token.text.empty()) token.text = "[EMPTY_" + std::to_string(i) + "]";
    vocab.text_to_id[token.text] = static_cast<int32_t>(i);
  }
  // Markers that end a turn are control tokens whatever the file says, so they render
  // empty and are matched in text only when special tokens are parsed.
  for (TokenData& token : vocab.tokens) {
    if (is_end_of_generation_text(token.text)) token.type = TokenType::kControl;
  }
}

namespace {

// "'key'" for messages (built by appending: GCC 12 misreports "'" + std::string(...)).
std::string quoted(std::string_view key) {
  std::string out = "'";
  out.append(key);
  out.push_back('\'');
  return out;
}

Result<const gguf::Array*> required_array(const gguf::File& file, std::string_view key,
                                          gguf::ValueType element_type) {
  const gguf::Array* array = file.get_array(key);
  if (array == nullptr) return not_found("GGUF has no array " + quoted(key));
  if (array->element_type != element_type) {
    return invalid_argument(quoted(key) + " should hold " +
                            std::string(gguf::value_type_name(element_type)) + ", found " +
                            std::string(gguf::value_type_name(array->element_type)));
  }
  return array;
}

// Reads an optional token-id key; absent keeps the default, out of range is an error.
Status read_token_id(const gguf::File& file, std::string_view key, int32_t n_tokens,
                     int32_t& id) {
  const gguf::Value* value = file.find(key);
  if (value == nullptr) return Status();
  const std::optional<int64_t> v = value->as_int();
  if (!v) return invalid_argument(quoted(key) + " is not an integer");
  if (*v == -1) {  // some converters write -1 for "none"
    id = kNoToken;
    return Status();
  }
  if (*v < 0 || *v >= n_tokens) {
    return corrupt_data(quoted(key) + " = " + std::to_string(*v) +
                        " is outside the vocabulary of " + std::to_string(n_tokens) + " tokens");
  }
  id = static_cast<int32_t>(*v);
  return Status();
}

}  // namespace

Result<Vocab> load_vocab(const gguf::File& file) {
  Vocab vocab;
  const Result<std::string> model = file.get_string("tokenizer.ggml.model");
  if (!model.ok()) return model.status();
  if (*model == "llama") {
    vocab.kind = VocabKind::kSentencePiece;
    // SentencePiece defaults, before the file's own flags.
    vocab.bos_id = 1;
    vocab.eos_id = 2;
    vocab.unk_id = 0;
    vocab.add_bos = true;
    vocab.add_space_prefix = true;
  } else if (*model == "gpt2") {
    vocab.kind = VocabKind::kByteLevelBpe;
  } else if (*model == "bert") {
    vocab.kind = VocabKind::kWordPiece;
    // [CLS] text [SEP], as BERT's tokenizers write every input.
    vocab.add_bos = true;
    vocab.add_eos = true;
  } else {
    return unsupported("tokenizer.ggml.model '" + *model + "' (supported: llama, gpt2, bert)");
  }
  vocab.pre = file.get_string_or("tokenizer.ggml.pre", "default");
  if (vocab.kind == VocabKind::kByteLevelBpe) {
    // An unknown pre-tokenizer is reported when a Tokenizer is built from this vocab.
    const Result<PreTokenizerConfig> pre = pretokenizer_config(vocab.pre);
    if (pre.ok()) vocab.add_bos = pre->add_bos_by_default;
  }

  Result<const gguf::Array*> texts =
      required_array(file, "tokenizer.ggml.tokens", gguf::ValueType::kString);
  if (!texts.ok()) return texts.status();
  const size_t n_tokens = (*texts)->items.size();
  if (n_tokens == 0 || n_tokens > static_cast<size_t>(INT32_MAX)) {
    return corrupt_data("tokenizer.ggml.tokens holds " + std::to_string(n_tokens) + " tokens");
  }
  vocab.tokens.resize(n_tokens);
  for (size_t i = 0; i < n_tokens; ++i) vocab.tokens[i].text = *(*texts)->items[i].as_string();

  if (const gguf::Array* scores = file.get_array("tokenizer.ggml.scores")) {
    if (scores->items.size() < n_tokens) {
      return corrupt_data("tokenizer.ggml.scores has " + std::to_string(scores->items.size()) +
                          " entries for " + std::to_string(n_tokens) + " tokens");
    }
    for (size_t i = 0; i < n_tokens; ++i) {
      const std::optional<double> score = scores->items[i].as_double();
      if (!score) return invalid_argument("tokenizer.ggml.scores holds a non-number");
      vocab.tokens[i].score = static_cast<float>(*score);
    }
  }
  if (const gguf::Array* types = file.get_array("tokenizer.ggml.token_type")) {
    if (types->items.size() < n_tokens) {
      return corrupt_data("tokenizer.ggml.token_type has " + std::to_string(types->items.size()) +
                          " entries for " + std::to_string(n_tokens) + " tokens");
    }
    for (size_t i = 0; i < n_tokens; ++i) {
      const std::optional<int64_t> type = types->items[i].as_int();
      if (!type) return invalid_argument("tokenizer.ggml.token_type holds a non-integer");
      // Unknown type numbers become kUndefined: such tokens never render.
      vocab.tokens[i].type = (*type >= 1 && *type <= 6) ? static_cast<TokenType>(*type)
                                                         : TokenType::kUndefined;
    }
  }

  if (vocab.kind == VocabKind::kByteLevelBpe) {
    Result<const gguf::Array*> merges =
        required_array(file, "tokenizer.ggml.merges", gguf::ValueType::kString);
    if (!merges.ok()) return merges.status();
    vocab.merges.reserve((*merges)->items.size());
    for (const gguf::Value& merge : (*merges)->items) vocab.merges.push_back(*merge.as_string());
  }

  const auto n = static_cast<int32_t>(n_tokens);
  TM_RETURN_IF_ERROR(read_token_id(file, "tokenizer.ggml.bos_token_id", n, vocab.bos_id));
  TM_RETURN_IF_ERROR(read_token_id(file, "tokenizer.ggml.eos_token_id", n, vocab.eos_id));
  TM_RETURN_IF_ERROR(read_token_id(file, "tokenizer.ggml.eot_token_id", n, vocab.eot_id));
  TM_RETURN_IF_ERROR(read_token_id(file, "tokenizer.ggml.eom_token_id", n, vocab.eom_id));
  TM_RETURN_IF_ERROR(read_token_id(file, "tokenizer.ggml.unknown_token_id", n, vocab.unk_id));
  TM_RETURN_IF_ERROR(read_token_id(file, "tokenizer.ggml.padding_token_id", n, vocab.pad_id));
  // Defaults that a file may not satisfy (a vocabulary smaller than the default id).
  for (int32_t* id : {&vocab.bos_id, &vocab.eos_id, &vocab.unk_id}) {
    if (!vocab.contains(*id)) *id = kNoToken;
  }

  vocab.add_bos = file.get_bool_or("tokenizer.ggml.add_bos_token", vocab.add_bos);
  vocab.add_eos = file.get_bool_or("tokenizer.ggml.add_eos_token", vocab.add_eos);
  vocab.add_space_prefix = file.get_bool_or("tokenizer.ggml.add_space_prefix", vocab.add_space_prefix);
  if (vocab.add_bos && vocab.bos_id == kNoToken) {
    return corrupt_data("tokenizer.ggml.add_bos_token is set but there is no BOS token");
  }
  if (vocab.add_eos && vocab.eos_id == kNoToken) {
    return corrupt_data("tokenizer.ggml.add_eos_token is set but there is no EOS token");
  }

  finish_vocab(vocab);
  return vocab;
}

}  // namespace tokenmill::tokenizer
