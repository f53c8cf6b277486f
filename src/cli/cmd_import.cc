// tokenmill import FILE.gguf NAME[:TAG]: adds a local file to the store.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/store_option.h"

namespace tokenmill::cli {

namespace {

struct ImportOptions {
  std::string file;
  std::string name;
  std::string dir;
  bool link = false;
};

int run_import(const ImportOptions& options) {
  auto name = store::parse_model_name(options.name);
  if (!name.ok()) return store_error(name.status());
  store::ModelStore store = open_store(options.dir);
  auto entry = store.import_file(options.file, *name, options.link);
  if (!entry.ok()) return store_error(entry.status());
  std::printf("imported %s as %s (sha256 %s%s)\n", options.file.c_str(), entry->name.full().c_str(),
              entry->digest.substr(0, 12).c_str(),
              entry->linked ? ", linked where it lies" : options.link ? ", hard-linked" : "");
  return 0;
}

}  // namespace

void register_import(CLI::App& app) {
  auto o = std::make_shared<ImportOptions>();
  CLI::App* cmd = app.add_subcommand("import", "Add a local GGUF file to the store under a name");
  cmd->add_option("file", o->file, "The GGUF file")->required();
  cmd->add_option("name", o->name, "NAME[:TAG] (tag: latest)")->required();
  cmd->add_flag("--link", o->link,
                "Do not copy: hard-link the file into the store, or record where it lies when it is on another "
                "file system");
  add_models_dir_option(cmd, o->dir);
  cmd->callback([o] { exit_code() = run_import(*o); });
}

}  // namespace tokenmill::cli
