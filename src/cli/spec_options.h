// --spec, --draft-model, --draft-max, --spec-ngram-min, --spec-ngram-max: speculative
// decoding for the commands that run the serving engine, read straight into an
// engine::SpeculativeConfig (docs/speculative.md), the draft model's path beside it
// (cli/draft_model_option.h loads it). The ranges are checked by CLI11; the constraints
// across flags by engine::speculative_config_error after parsing.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "engine/speculation.h"

namespace tokenmill::cli {

inline void add_spec_options(CLI::App* cmd, engine::SpeculativeConfig& spec, std::string& draft_model_path) {
  cmd->add_option_function<std::string>(
         "--spec",
         [&spec](const std::string& mode) {
           spec.mode = mode == "off" ? engine::SpecMode::kOff : mode == "draft" ? engine::SpecMode::kDraft
                                                                                : engine::SpecMode::kNgram;
         },
         "Speculative decoding: ngram (drafts from the sequence's own prompt and output, where they pay), "
         "draft (a draft model's, --draft-model) or off")
      ->check(CLI::IsMember({"ngram", "draft", "off"}))
      ->default_str(spec.mode == engine::SpecMode::kOff ? "off" : "ngram");
  cmd->add_option("--draft-model", draft_model_path,
                  "A smaller GGUF with the model's vocabulary whose greedy tokens are the drafts (implies --spec "
                  "draft unless --spec off)");
  cmd->add_option("--draft-max", spec.draft_max, "Draft tokens per sequence and step, at most")
      ->capture_default_str()->check(CLI::Range(1, engine::kMaxDrafts));
  cmd->add_option("--spec-ngram-min", spec.ngram_min, "Shortest suffix the n-gram drafter matches")
      ->capture_default_str()->check(CLI::Range(1, 64));
  cmd->add_option("--spec-ngram-max", spec.ngram_max, "Longest suffix the n-gram drafter matches (tried first)")
      ->capture_default_str()->check(CLI::Range(1, 64));
}

}  // namespace tokenmill::cli
