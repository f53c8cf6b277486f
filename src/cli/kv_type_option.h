// --kv-type, for the commands that build a KV cache: "f16" or "q8_0", read straight into
// an ops::KvType (anything else is refused, naming the values allowed).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "ops/kv_storage.h"

namespace tokenmill::cli {

inline CLI::Option* add_kv_type_option(CLI::App* cmd, ops::KvType& type, const std::string& help) {
  return cmd
      ->add_option_function<std::string>(
          "--kv-type", [&type](const std::string& name) { type = *ops::parse_kv_type(name); }, help)
      ->check(CLI::IsMember({ops::kv_type_name(ops::KvType::kF16), ops::kv_type_name(ops::KvType::kQ8_0)}))
      ->default_str(ops::kv_type_name(type));
}

}  // namespace tokenmill::cli
