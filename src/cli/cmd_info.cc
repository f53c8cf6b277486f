// tokenmill info MODEL: the file's metadata and tensor table.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/model_path.h"
#include "gguf/gguf_file.h"

namespace tokenmill::cli {

namespace {

struct InfoOptions {
  std::string model = "default";
  bool all_items = false;
};

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? " x " : "") + std::to_string(shape[i]);
  return s;
}

int run_info(const InfoOptions& options) {
  auto path = resolve_model_path(options.model);
  if (!path.ok()) {
    std::fprintf(stderr, "error: %s\n", path.status().message().c_str());
    return 1;
  }
  auto file = gguf::File::open(*path);
  if (!file.ok()) {
    std::fprintf(stderr, "error: %s\n", file.status().to_string().c_str());
    return 1;
  }
  std::printf("file: %s\nGGUF version: %u, %zu bytes, alignment %llu, data at offset %llu\n", path->c_str(),
              file->version(), file->file_size(), static_cast<unsigned long long>(file->alignment()),
              static_cast<unsigned long long>(file->data_offset()));
  std::printf("\nmetadata (%zu keys):\n", file->metadata().size());
  const size_t max_items = options.all_items ? SIZE_MAX : 8;
  for (const gguf::KeyValue& kv : file->metadata()) {
    std::string type(gguf::value_type_name(kv.value.type()));
    if (const gguf::Array* a = kv.value.as_array()) {
      type += "[" + std::string(gguf::value_type_name(a->element_type)) + "; " + std::to_string(a->items.size()) + "]";
    }
    std::printf("  %-45s %-16s %s\n", kv.key.c_str(), type.c_str(), kv.value.to_display_string(max_items).c_str());
  }
  std::printf("\ntensors (%zu):\n  %-40s %-6s %-22s %12s\n", file->tensors().size(), "name", "type", "shape", "bytes");
  uint64_t total = 0;
  for (const gguf::TensorInfo& t : file->tensors()) {
    std::printf("  %-40s %-6s %-22s %12llu\n", t.name.c_str(), std::string(gguf::tensor_type_name(t.type)).c_str(),
                shape_string(t.shape).c_str(), static_cast<unsigned long long>(t.n_bytes));
    total += t.n_bytes;
  }
  std::printf("  total tensor bytes: %llu (%.1f MiB)\n", static_cast<unsigned long long>(total), total / 1048576.0);
  return 0;
}

}  // namespace

void register_info(CLI::App& app) {
  auto options = std::make_shared<InfoOptions>();
  CLI::App* cmd = app.add_subcommand("info", "Print a GGUF file's metadata and tensor table");
  cmd->add_option("model", options->model, "GGUF file, or 'default'")->required();
  cmd->add_flag("--all", options->all_items, "Print every element of long arrays");
  cmd->callback([options] { exit_code() = run_info(*options); });
}

}  // namespace tokenmill::cli
