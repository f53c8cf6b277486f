// tokenmill rm NAME...: removes names from the store (a blob goes with its last name).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/store_option.h"

namespace tokenmill::cli {

namespace {

struct RmOptions {
  std::vector<std::string> names;
  std::string dir;
};

int run_rm(const RmOptions& options) {
  store::ModelStore store = open_store(options.dir);
  int status = 0;
  for (const std::string& text : options.names) {
    auto name = store::parse_model_name(text);
    if (!name.ok()) {
      status = store_error(name.status());
      continue;
    }
    if (Status s = store.remove(*name); !s.ok()) {
      status = store_error(s);
      continue;
    }
    std::printf("deleted %s\n", name->full().c_str());
  }
  return status;
}

}  // namespace

void register_rm(CLI::App& app) {
  auto o = std::make_shared<RmOptions>();
  CLI::App* cmd = app.add_subcommand("rm", "Remove models from the store");
  cmd->add_option("names", o->names, "NAME[:TAG]...")->required();
  add_models_dir_option(cmd, o->dir);
  cmd->callback([o] { exit_code() = run_rm(*o); });
}

}  // namespace tokenmill::cli
