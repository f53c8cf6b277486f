#include "cli/load_options.h"
#include "cli/eval_setup.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "cli/model_path.h"

namespace tokenmill::cli {

Result<EvalModel> load_eval_model(const std::string& spec, int n_threads, bool repack) {
  EvalModel m;
  auto path = resolve_model_path(spec);
  if (!path.ok()) return path.status();
  m.path = *path;
  model::LoadOptions load = load_options(n_threads);
  load.repack = load.repack && repack;
  auto loaded = model::load_model(m.path, load);
  if (!loaded.ok()) return loaded.status();
  m.model = std::move(loaded).value();
  auto tokenizer = tokenizer::Tokenizer::from_gguf(m.model->file());
  if (!tokenizer.ok()) return tokenizer.status();
  m.tokenizer = std::move(tokenizer).value();
  if (m.tokenizer->add_bos()) m.bos_id = m.tokenizer->bos_id();
  return m;
}

Result<std::vector<int32_t>> tokenize_text_file(const EvalModel& m, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot read text file '" + path + "': " + std::strerror(errno));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return io_error("cannot read text file '" + path + "'");
  if (text.empty()) return invalid_argument("text file '" + path + "' is empty");
  return m.tokenizer->encode(text, /*add_special=*/true, /*parse_special=*/false);
}

}  // namespace tokenmill::cli
