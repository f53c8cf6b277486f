// tokenmill show NAME: a model of the store: where its file is, what it is, its chat
// template.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/store_option.h"
#include "gguf/file_summary.h"
#include "gguf/gguf_file.h"
#include "tokenizer/chat_template.h"

namespace tokenmill::cli {

namespace {

struct ShowOptions {
  std::string name;
  std::string dir;
  bool template_only = false;
};

int run_show(const ShowOptions& options) {
  const store::ModelStore store = open_store(options.dir);
  auto entry = store.find(options.name);
  if (!entry.ok()) return store_error(entry.status());
  auto file = gguf::File::open(entry->path);
  if (!file.ok()) return store_error(file.status());
  auto chat_template = tokenizer::chat_template_for_model(*file);
  const std::string template_source = chat_template.ok() ? chat_template->source() : "";
  if (options.template_only) {
    std::printf("%s\n", template_source.c_str());
    return 0;
  }
  const gguf::FileSummary s = gguf::summarize(*file);
  const std::string arch = s.architecture;
  std::printf("  Model\n");
  std::printf("    %-22s %s\n", "name", entry->name.full().c_str());
  std::printf("    %-22s %s\n", "architecture", arch.c_str());
  std::printf("    %-22s %s\n", "parameters", gguf::parameter_size_text(s.parameter_count).c_str());
  std::printf("    %-22s %s\n", "quantization", s.quantization.c_str());
  const int64_t context = file->get_int_or(arch + ".context_length", 0);
  const int64_t embedding = file->get_int_or(arch + ".embedding_length", 0);
  if (context > 0) std::printf("    %-22s %lld\n", "context length", static_cast<long long>(context));
  if (embedding > 0) std::printf("    %-22s %lld\n", "embedding length", static_cast<long long>(embedding));
  std::printf("\n  File\n");
  std::printf("    %-22s %s\n", "path", entry->path.c_str());
  std::printf("    %-22s sha256:%s\n", "digest", entry->digest.c_str());
  std::printf("    %-22s %lld bytes\n", "size", static_cast<long long>(entry->size));
  std::printf("    %-22s %s\n", "source", entry->source.c_str());
  const std::string license = file->get_string_or("general.license", "");
  if (!license.empty()) std::printf("    %-22s %s\n", "license", license.c_str());
  std::printf("\n  Chat template (%s)\n", chat_template.ok() ? "from the file or built in" : "none");
  if (chat_template.ok()) std::printf("%s\n", template_source.c_str());
  return 0;
}

}  // namespace

void register_show(CLI::App& app) {
  auto o = std::make_shared<ShowOptions>();
  CLI::App* cmd = app.add_subcommand("show", "Describe a model of the store");
  cmd->add_option("name", o->name, "NAME[:TAG]")->required();
  cmd->add_flag("--template", o->template_only, "Print only the chat template");
  add_models_dir_option(cmd, o->dir);
  cmd->callback([o] { exit_code() = run_show(*o); });
}

}  // namespace tokenmill::cli
