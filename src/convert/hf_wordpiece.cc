#include "convert/hf_wordpiece.h"

#include <optional>
#include <unordered_map>
#include <vector>

namespace tokenmill::convert {

namespace {

using json = nlohmann::json;

using namespace gguf_token_type;
constexpr const char* kWordStart = "\xe2\x96\x81";  // U+2581

// The top-level BertNormalizer's lowercase and strip_accents (null: as lowercase), or
// tokenizer_config.json's do_lower_case where there is no such normalizer.
Status check_uncased(const json& tokenizer, const json& tokenizer_config, const std::string& label) {
  const json* normalizer = nullptr;
  if (tokenizer.contains("normalizer") && tokenizer["normalizer"].is_object()) {
    const json& n = tokenizer["normalizer"];
    if (n.value("type", "") == "BertNormalizer") normalizer = &n;
  }
  bool lowercase = tokenizer_config.is_object() && tokenizer_config.value("do_lower_case", false);
  bool strip_accents = lowercase;
  if (normalizer) {
    lowercase = normalizer->value("lowercase", true);
    strip_accents = lowercase;
    if (normalizer->contains("strip_accents") && (*normalizer)["strip_accents"].is_boolean()) {
      strip_accents = (*normalizer)["strip_accents"].get<bool>();
    }
  }
  if (!lowercase || !strip_accents) {
    return unsupported(label + ": a cased WordPiece tokenizer (or one that keeps accents) is not supported; "
                       "only uncased BERT vocabularies are");
  }
  return {};
}

}  // namespace

Result<TokenizerSummary> write_wordpiece_tokenizer(const json& t, const json& tokenizer_config, const HfConfig& config,
                                                   const std::string& label, gguf::Writer& writer) {
  TM_RETURN_IF_ERROR(check_uncased(t, tokenizer_config, label));
  const json& model = t["model"];
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return invalid_argument(label + ": model.vocab is not an object");
  }
  const std::string prefix = model.contains("continuing_subword_prefix") && model["continuing_subword_prefix"].is_string()
                                 ? model["continuing_subword_prefix"].get<std::string>()
                                 : "##";
  const size_t n_tokens = static_cast<size_t>(config.vocab_size);
  std::vector<std::optional<std::string>> texts(n_tokens);
  for (const auto& [text, id] : model["vocab"].items()) {
    if (!id.is_number_integer()) return invalid_argument(label + ": the id of " + json(text).dump() + " is not an integer");
    const int64_t i = id.get<int64_t>();
    if (i < 0 || i >= config.vocab_size) {
      return invalid_argument(label + ": token " + json(text).dump() + " has id " + std::to_string(i) +
                              ", outside the model's " + std::to_string(config.vocab_size) + " embedding rows");
    }
    if (texts[static_cast<size_t>(i)]) {
      return invalid_argument(label + ": id " + std::to_string(i) + " is both " + json(*texts[static_cast<size_t>(i)]).dump() +
                              " and " + json(text).dump());
    }
    texts[static_cast<size_t>(i)] = text;
  }

  std::vector<std::string> tokens(n_tokens);
  std::vector<int32_t> types(n_tokens, kNormal);
  std::unordered_map<std::string, int64_t> id_of;
  for (size_t i = 0; i < n_tokens; ++i) {
    if (!texts[i]) {  // rows past the vocabulary (models round their embedding up)
      tokens[i] = "[PAD" + std::to_string(i) + "]";
      types[i] = kUnused;
      continue;
    }
    const std::string& text = *texts[i];
    id_of.emplace(text, static_cast<int64_t>(i));
    if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
      tokens[i] = text;
      types[i] = kControl;
    } else if (!prefix.empty() && text.starts_with(prefix) && text.size() > prefix.size()) {
      tokens[i] = text.substr(prefix.size());
    } else {
      tokens[i] = kWordStart + text;
    }
  }
  if (t.contains("added_tokens") && t["added_tokens"].is_array()) {
    for (const json& a : t["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string()) {
        return invalid_argument(label + ": an added token lacks an integer id or a content string");
      }
      const int64_t i = a["id"].get<int64_t>();
      const std::string text = a["content"].get<std::string>();
      if (i < 0 || i >= config.vocab_size || !texts[static_cast<size_t>(i)] || *texts[static_cast<size_t>(i)] != text) {
        return unsupported(label + ": added token " + json(text).dump() +
                           " is not in the WordPiece vocabulary under its id");
      }
      if (a.value("special", false)) types[static_cast<size_t>(i)] = kControl;
    }
  }

  // [CLS] ... [SEP]: the texts tokenizer_config.json names, else BERT's own.
  auto special = [&](const char* key, const char* fallback) -> std::optional<int64_t> {
    std::string text = fallback;
    if (tokenizer_config.is_object() && tokenizer_config.contains(key) && tokenizer_config[key].is_string()) {
      text = tokenizer_config[key].get<std::string>();
    }
    auto it = id_of.find(text);
    return it == id_of.end() ? std::nullopt : std::optional<int64_t>(it->second);
  };
  const auto cls = special("cls_token", "[CLS]");
  const auto sep = special("sep_token", "[SEP]");
  const auto unk = special("unk_token", "[UNK]");
  if (!cls || !sep || !unk) return invalid_argument(label + ": the vocabulary lacks [CLS], [SEP] or [UNK]");
  const auto pad = special("pad_token", "[PAD]");
  const auto mask = special("mask_token", "[MASK]");

  writer.set_string("tokenizer.ggml.model", "bert");
  writer.set_string("tokenizer.ggml.pre", "default");
  writer.set_strings("tokenizer.ggml.tokens", tokens);
  writer.set("tokenizer.ggml.token_type", gguf::make_array(gguf::ValueType::kInt32, types));
  writer.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(*cls));
  writer.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(*sep));
  writer.set_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(*unk));
  writer.set_u32("tokenizer.ggml.cls_token_id", static_cast<uint32_t>(*cls));
  writer.set_u32("tokenizer.ggml.seperator_token_id", static_cast<uint32_t>(*sep));  // llama.cpp's spelling
  if (pad) writer.set_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(*pad));
  if (mask) writer.set_u32("tokenizer.ggml.mask_token_id", static_cast<uint32_t>(*mask));
  writer.set_bool("tokenizer.ggml.add_bos_token", true);
  writer.set_bool("tokenizer.ggml.add_eos_token", true);

  TokenizerSummary summary;
  summary.model = "bert";
  summary.pre = "wordpiece";
  summary.n_tokens = static_cast<int64_t>(n_tokens);
  return summary;
}

}  // namespace tokenmill::convert
