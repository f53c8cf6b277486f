#include "convert/hf_tokenizer.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "convert/json_file.h"
#include "convert/hf_wordpiece.h"
#include "convert/sentencepiece_model.h"

namespace tokenmill::convert {

namespace {

using json = nlohmann::json;

// The split patterns of the byte-level BPE families the tokenizer layer knows, as
// tokenizer.json spells them, and the tokenizer.ggml.pre name of each.
struct KnownPattern {
  const char* pre;
  const char* pattern;
};
constexpr KnownPattern kPatterns[] = {
    {"llama-bpe",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
    {"qwen2",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
};

using namespace gguf_token_type;

// The split patterns and the byte-level step of a pre_tokenizer, Sequence included.
void walk_pre_tokenizer(const json& p, std::vector<std::string>& patterns, bool& byte_level, bool& byte_level_regex,
                        std::vector<std::string>& others) {
  if (!p.is_object()) return;
  const std::string type = p.value("type", "");
  if (type == "Sequence" && p.contains("pretokenizers") && p["pretokenizers"].is_array()) {
    for (const json& q : p["pretokenizers"]) walk_pre_tokenizer(q, patterns, byte_level, byte_level_regex, others);
  } else if (type == "Split" && p.contains("pattern") && p["pattern"].is_object()) {
    const json& pat = p["pattern"];
    if (pat.contains("Regex") && pat["Regex"].is_string()) patterns.push_back(pat["Regex"].get<std::string>());
    else others.push_back("Split on a string");
  } else if (type == "ByteLevel") {
    byte_level = true;
    byte_level_regex = p.value("use_regex", true);
  } else {
    others.push_back(type.empty() ? "an untyped step" : type);
  }
}

Result<std::string> pre_tokenizer_name(const json& tokenizer, const std::string& label) {
  std::vector<std::string> patterns, others;
  bool byte_level = false, byte_level_regex = false;
  if (tokenizer.contains("pre_tokenizer")) {
    walk_pre_tokenizer(tokenizer["pre_tokenizer"], patterns, byte_level, byte_level_regex, others);
  }
  if (!byte_level) return unsupported(label + ": the pre-tokenizer has no ByteLevel step (only byte-level BPE is converted)");
  if (!others.empty()) return unsupported(label + ": pre-tokenizer step '" + others[0] + "' is not supported");
  if (patterns.empty() && byte_level_regex) return std::string("gpt2");
  if (patterns.size() == 1 && !byte_level_regex) {
    for (const KnownPattern& k : kPatterns) {
      if (patterns[0] == k.pattern) return std::string(k.pre);
    }
    return unsupported(label + ": split pattern " + json(patterns[0]).dump() +
                       " is not one tokenmill knows (Llama 3, Qwen 2, GPT-2)");
  }
  return unsupported(label + ": a pre-tokenizer with " + std::to_string(patterns.size()) +
                     " split patterns is not supported");
}

// "bos_token": "<s>" or {"content": "<s>", ...} or null.
std::optional<std::string> special_text(const json& config, const char* key) {
  if (!config.is_object() || !config.contains(key)) return std::nullopt;
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return std::nullopt;
}

std::optional<int64_t> first_id(const json& config, const char* key) {
  if (!config.is_object() || !config.contains(key)) return std::nullopt;
  const json& v = config[key];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_array() && !v.empty() && v[0].is_number_integer()) return v[0].get<int64_t>();
  return std::nullopt;
}

// Whether the post-processor puts the BOS token before a single text.
bool post_processor_adds(const json& tokenizer, const std::string& text) {
  if (!tokenizer.contains("post_processor")) return false;
  std::vector<const json*> stack = {&tokenizer["post_processor"]};
  while (!stack.empty()) {
    const json* p = stack.back();
    stack.pop_back();
    if (!p->is_object()) continue;
    if (p->contains("processors") && (*p)["processors"].is_array()) {
      for (const json& q : (*p)["processors"]) stack.push_back(&q);
    }
    if (p->value("type", "") != "TemplateProcessing" || !p->contains("single") || !(*p)["single"].is_array()) continue;
    const json& first = (*p)["single"].empty() ? json() : (*p)["single"][0];
    if (first.is_object() && first.contains("SpecialToken") && first["SpecialToken"].value("id", "") == text) {
      return true;
    }
  }
  return false;
}

Result<std::string> chat_template(const std::filesystem::path& dir, const json& tokenizer_config) {
  if (tokenizer_config.is_object() && tokenizer_config.contains("chat_template")) {
    const json& t = tokenizer_config["chat_template"];
    if (t.is_string()) return t.get<std::string>();
    if (t.is_array()) {
      for (const json& named : t) {
        if (named.is_object() && named.value("name", "") == "default" && named.contains("template") &&
            named["template"].is_string()) {
          return named["template"].get<std::string>();
        }
      }
    }
  }
  std::ifstream in(dir / "chat_template.jinja");  // where newer transformers save it
  if (!in) return std::string();
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

Result<TokenizerSummary> write_hf_tokenizer(const std::string& dir_name, const HfConfig& config, gguf::Writer& writer) {
  namespace fs = std::filesystem;
  const fs::path dir(dir_name);
  const std::string label = (dir / "tokenizer.json").string();
  auto tokenizer = read_json_object(dir / "tokenizer.json", /*required=*/true);
  if (!tokenizer.ok()) return tokenizer.status();
  auto tokenizer_config = read_json_object(dir / "tokenizer_config.json", false);
  if (!tokenizer_config.ok()) return tokenizer_config.status();
  auto generation_config = read_json_object(dir / "generation_config.json", false);
  if (!generation_config.ok()) return generation_config.status();

  const json& t = *tokenizer;
  if (!t.contains("model") || !t["model"].is_object()) return invalid_argument(label + ": has no 'model' object");
  const json& model = t["model"];
  const std::string type = model.value("type", "BPE");
  if (type == "WordPiece") return write_wordpiece_tokenizer(t, *tokenizer_config, config, label, writer);
  // SentencePiece models (Gemma, Llama 2, Mistral 7B) keep their scores and piece types
  // only in tokenizer.model; tokenizer.json's byte_fallback BPE is its translation.
  const bool sentencepiece = type == "Unigram" || model.value("byte_fallback", false);
  if (type != "BPE" && !sentencepiece) {
    return unsupported(label + ": tokenizer model '" + type + "' is not supported (supported: BPE, SentencePiece, WordPiece)");
  }
  std::optional<SentencePieceModel> spm;
  std::string pre = "default";
  if (sentencepiece) {
    if (!fs::exists(dir / "tokenizer.model")) {
      return unsupported(label + ": a SentencePiece tokenizer needs its tokenizer.model beside tokenizer.json");
    }
    auto read = read_sentencepiece_model((dir / "tokenizer.model").string());
    if (!read.ok()) return read.status();
    spm = std::move(read).value();
  } else {
    auto name = pre_tokenizer_name(t, label);
    if (!name.ok()) return name.status();
    pre = *name;
    if (!model.contains("vocab") || !model["vocab"].is_object()) {
      return invalid_argument(label + ": model.vocab is not an object");
    }
  }

  // Tokens by id: the vocabulary, then added tokens (which may also restate ids).
  std::vector<std::optional<std::string>> texts;
  std::vector<int32_t> types;
  std::vector<float> scores;
  auto place = [&](int64_t id, const std::string& text, int32_t token_type, float score) -> Status {
    if (id < 0 || id >= config.vocab_size) {
      return invalid_argument(label + ": token " + json(text).dump() + " has id " + std::to_string(id) +
                              ", outside the model's " + std::to_string(config.vocab_size) + " embedding rows");
    }
    const size_t i = static_cast<size_t>(id);
    if (texts.size() <= i) {
      texts.resize(i + 1);
      types.resize(i + 1, kUnused);
      scores.resize(i + 1, 0.0f);
    }
    if (texts[i]) {
      if (*texts[i] != text) {
        return invalid_argument(label + ": id " + std::to_string(id) + " is both " + json(*texts[i]).dump() +
                                " and " + json(text).dump());
      }
      return {};  // an added token restating a piece keeps the piece's type and score
    }
    texts[i] = text;
    types[i] = token_type;
    scores[i] = score;
    return {};
  };
  if (spm) {
    for (size_t i = 0; i < spm->pieces.size(); ++i) {
      const SentencePiece& p = spm->pieces[i];
      TM_RETURN_IF_ERROR(place(static_cast<int64_t>(i), p.text, p.type, p.score));
    }
  } else {
    for (const auto& [text, id] : model["vocab"].items()) {
      if (!id.is_number_integer()) return invalid_argument(label + ": the id of " + json(text).dump() + " is not an integer");
      TM_RETURN_IF_ERROR(place(id.get<int64_t>(), text, kNormal, 0.0f));
    }
  }
  if (t.contains("added_tokens") && t["added_tokens"].is_array()) {
    for (const json& a : t["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string()) {
        return invalid_argument(label + ": an added token lacks an integer id or a content string");
      }
      TM_RETURN_IF_ERROR(place(a["id"].get<int64_t>(), a["content"].get<std::string>(),
                               a.value("special", false) ? kControl : kUserDefined, 0.0f));
    }
  }
  std::vector<std::string> tokens(static_cast<size_t>(config.vocab_size));
  types.resize(tokens.size(), kUnused);
  scores.resize(tokens.size(), 0.0f);
  texts.resize(tokens.size());
  std::unordered_map<std::string, int64_t> id_of;
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = texts[i] ? *texts[i] : "[PAD" + std::to_string(i) + "]";
    id_of.emplace(tokens[i], static_cast<int64_t>(i));
  }

  std::vector<std::string> merges;
  if (!spm && model.contains("merges") && model["merges"].is_array()) {
    for (const json& m : model["merges"]) {
      if (m.is_string()) {
        merges.push_back(m.get<std::string>());
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
      } else {
        return invalid_argument(label + ": a merge is neither \"a b\" nor [\"a\", \"b\"]");
      }
    }
  }

  const std::string ggml_model = spm ? "llama" : "gpt2";
  writer.set_string("tokenizer.ggml.model", ggml_model);
  writer.set_string("tokenizer.ggml.pre", pre);
  writer.set_strings("tokenizer.ggml.tokens", tokens);
  if (spm) writer.set("tokenizer.ggml.scores", gguf::make_array(gguf::ValueType::kFloat32, scores));
  writer.set("tokenizer.ggml.token_type", gguf::make_array(gguf::ValueType::kInt32, types));
  if (spm) {
    writer.set_bool("tokenizer.ggml.add_space_prefix", spm->add_dummy_prefix);
  } else {
    writer.set_strings("tokenizer.ggml.merges", merges);
  }

  // Special ids: the tokenizer config's texts first, then generation_config, then config.
  auto id_for = [&](const char* key) -> std::optional<int64_t> {
    if (auto text = special_text(*tokenizer_config, key)) {
      auto it = id_of.find(*text);
      if (it != id_of.end()) return it->second;
    }
    return std::nullopt;
  };
  std::optional<int64_t> bos = id_for("bos_token");
  std::optional<int64_t> eos = id_for("eos_token");
  if (!bos) bos = first_id(*generation_config, "bos_token_id");
  if (!bos && special_text(*tokenizer_config, "bos_token")) bos = config.bos_token_id;
  if (!eos) eos = first_id(*generation_config, "eos_token_id");
  if (!eos) eos = config.eos_token_id;
  const std::optional<int64_t> pad = id_for("pad_token");
  const std::optional<int64_t> unk = id_for("unk_token");
  auto set_id = [&](const char* key, std::optional<int64_t> id) -> Status {
    if (!id) return {};
    if (*id < 0 || *id >= config.vocab_size) {
      return invalid_argument(dir_name + ": " + key + " " + std::to_string(*id) + " is outside the vocabulary");
    }
    writer.set_u32(std::string("tokenizer.ggml.") + key, static_cast<uint32_t>(*id));
    return {};
  };
  TM_RETURN_IF_ERROR(set_id("bos_token_id", bos));
  TM_RETURN_IF_ERROR(set_id("eos_token_id", eos));
  TM_RETURN_IF_ERROR(set_id("padding_token_id", pad));
  TM_RETURN_IF_ERROR(set_id("unknown_token_id", unk));
  bool add_bos = false;
  if (tokenizer_config->is_object() && tokenizer_config->contains("add_bos_token") &&
      (*tokenizer_config)["add_bos_token"].is_boolean()) {
    add_bos = (*tokenizer_config)["add_bos_token"].get<bool>();
  } else if (bos) {
    add_bos = post_processor_adds(t, tokens[static_cast<size_t>(*bos)]);
  }
  writer.set_bool("tokenizer.ggml.add_bos_token", add_bos && bos.has_value());
  if (tokenizer_config->is_object() && tokenizer_config->value("add_eos_token", false) && eos) {
    writer.set_bool("tokenizer.ggml.add_eos_token", true);
  }
  auto templ = chat_template(dir, *tokenizer_config);
  if (!templ.ok()) return templ.status();
  if (!templ->empty()) writer.set_string("tokenizer.chat_template", *templ);

  TokenizerSummary summary;
  summary.model = ggml_model;
  summary.pre = spm ? "sentencepiece" : pre;
  summary.n_tokens = static_cast<int64_t>(tokens.size());
  summary.n_merges = static_cast<int64_t>(merges.size());
  return summary;
}

}  // namespace tokenmill::convert
