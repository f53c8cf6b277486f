#include "server/served_model.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>


namespace tokenmill::server {

namespace {

std::string model_name_from_path(const std::string& path) {
  std::filesystem::path p(path);
  std::string name = p.filename().string();
  if (name.size() > 5 && name.ends_with(".gguf")) name.resize(name.size() - 5);
  return name;
}

}  // namespace

ServedModel::ServedModel(const std::string& path, model::Model& model, const tokenizer::Tokenizer& tokenizer,
                         engine::Engine& engine, std::string name, std::string chat_template_source)
    : path_(path), name_(name.empty() ? model_name_from_path(path) : std::move(name)), model_(&model), tokenizer_(&tokenizer), engine_(&engine) {
  speaks_harmony_ = tokenizer.speaks_harmony() && chat_template_source.empty();
  auto chat_template = chat_template_source.empty() ? tokenizer::chat_template_for_model(model.file())
                                                    : tokenizer::ChatTemplate::parse(std::move(chat_template_source));
  if (chat_template.ok()) {
    chat_template_ = std::move(chat_template).value();
  } else {
    chat_template_error_ = chat_template.status().message();
  }
  max_context_ = engine.config().max_context;
  if (model.config().context_length > 0) max_context_ = std::min(max_context_, model.config().context_length);
  // One sequence can never hold more positions than the whole KV cache has.
  const engine::Engine::PoolCounters pool = engine.pool_counters();
  if (pool.n_blocks > 0) max_context_ = std::min(max_context_, pool.n_blocks * engine.config().block_size);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    file_size_ = st.st_size;
    modified_unix_ = st.st_mtime;
  } else {
    file_size_ = static_cast<int64_t>(model.file().file_size());
  }
  architecture_ = model.config().architecture_name;
  for (const auto& tensor : model.file().tensors()) parameter_count_ += tensor.n_elements();
}

bool ServedModel::answers_to(std::string_view requested) const {
  if (requested == name_ || requested == "default" || requested == "tokenmill") return true;
  constexpr std::string_view kLatest = ":latest";
  if (requested.ends_with(kLatest) && requested.substr(0, requested.size() - kLatest.size()) == name_) return true;
  return name_.ends_with(kLatest) && std::string_view(name_).substr(0, name_.size() - kLatest.size()) == requested;
}

Result<std::string> ServedModel::chat_text(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                           const nlohmann::ordered_json& variables) const {
  if (!chat_template_) return not_found("this model has no chat template: " + chat_template_error_);
  const auto& vocab = tokenizer_->vocab();
  auto piece = [&](int32_t id) { return id >= 0 ? tokenizer_->token_piece(id, true) : std::string(); };
  tokenizer::jinja::Dict dict{
      {"messages", tokenizer::jinja::Value::from_json(messages)},
      {"add_generation_prompt", tokenizer::jinja::Value(true)},
      {"bos_token", tokenizer::jinja::Value(piece(vocab.bos_id))},
      {"eos_token", tokenizer::jinja::Value(piece(vocab.eos_id))},
  };
  if (!tools.is_null()) dict.emplace_back("tools", tokenizer::jinja::Value::from_json(tools));
  if (variables.is_object()) {
    for (const auto& variable : variables.items()) {
      const std::string& name = variable.key();
      const bool taken = std::any_of(dict.begin(), dict.end(), [&](const auto& entry) { return entry.first == name; });
      if (!taken) dict.emplace_back(name, tokenizer::jinja::Value::from_json(variable.value()));
    }
  }
  return chat_template_->render_variables(dict);
}

std::vector<int32_t> ServedModel::chat_tokens(std::string_view text) const {
  return tokenizer_->encode(text, /*add_special=*/false, /*parse_special=*/true);
}

std::vector<int32_t> ServedModel::text_prompt(std::string_view text) const {
  return tokenizer_->encode(text, /*add_special=*/true, /*parse_special=*/true);
}

std::string_view ServedModel::chat_template_source() const {
  return chat_template_ ? std::string_view(chat_template_->source()) : std::string_view();
}

std::string ServedModel::parameter_size() const { return gguf::parameter_size_text(parameter_count_); }

std::string ServedModel::quantization_level() const {
  return gguf::file_type_name(model_->file().get_int_or("general.file_type", -1));
}

}  // namespace tokenmill::server
