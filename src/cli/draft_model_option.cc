#include "cli/draft_model_option.h"

#include "cli/load_options.h"
#include "engine/draft_model.h"

namespace tokenmill::cli {

Result<std::unique_ptr<model::Model>> attach_draft_model(const std::string& path, model::Model& target,
                                                         const tokenizer::Tokenizer& target_tokens,
                                                         engine::SpeculativeConfig& spec) {
  if (path.empty() || spec.mode == engine::SpecMode::kOff) return std::unique_ptr<model::Model>();
  model::LoadOptions load = load_options(target.backend().n_threads());
  load.thread_pool = target.backend().shared_thread_pool();
  auto draft = model::load_model(path, load);
  if (!draft.ok()) return Status(draft.status().code(), "--draft-model: " + draft.status().message());
  auto draft_tokens = tokenizer::Tokenizer::from_gguf((*draft)->file());
  if (!draft_tokens.ok()) return Status(draft_tokens.status().code(), "--draft-model: " + draft_tokens.status().message());
  const std::string mismatch = engine::draft_vocabulary_error(target, target_tokens, **draft, **draft_tokens);
  if (!mismatch.empty()) return invalid_argument("--draft-model: " + mismatch);
  spec.mode = engine::SpecMode::kDraft;
  spec.draft_model = draft->get();
  return std::move(draft).value();
}

}  // namespace tokenmill::cli
