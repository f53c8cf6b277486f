// tokenmill cp SOURCE DESTINATION: a second name for a model of the store (no bytes copied).
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/store_option.h"

namespace tokenmill::cli {

namespace {

struct CpOptions {
  std::string from;
  std::string to;
  std::string dir;
};

int run_cp(const CpOptions& options) {
  auto from = store::parse_model_name(options.from);
  if (!from.ok()) return store_error(from.status());
  auto to = store::parse_model_name(options.to);
  if (!to.ok()) return store_error(to.status());
  store::ModelStore store = open_store(options.dir);
  auto entry = store.copy(*from, *to);
  if (!entry.ok()) return store_error(entry.status());
  std::printf("copied %s to %s\n", from->full().c_str(), to->full().c_str());
  return 0;
}

}  // namespace

void register_cp(CLI::App& app) {
  auto o = std::make_shared<CpOptions>();
  CLI::App* cmd = app.add_subcommand("cp", "Give a model of the store another name");
  cmd->add_option("source", o->from, "NAME[:TAG]")->required();
  cmd->add_option("destination", o->to, "NAME[:TAG]")->required();
  add_models_dir_option(cmd, o->dir);
  cmd->callback([o] { exit_code() = run_cp(*o); });
}

}  // namespace tokenmill::cli
