// --spec, --draft-max, --spec-ngram-min, --spec-ngram-max: speculative decoding for the
// commands that run the serving engine, read straight into an engine::SpeculativeConfig
// (docs/speculative.md). The ranges are checked by CLI11; the one constraint across
// flags (min <= max) by spec_options_error after parsing.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "engine/speculation.h"

namespace tokenmill::cli {

inline void add_spec_options(CLI::App* cmd, engine::SpeculativeConfig& spec) {
  cmd->add_option_function<std::string>(
         "--spec",
         [&spec](const std::string& mode) { spec.mode = mode == "off" ? engine::SpecMode::kOff : engine::SpecMode::kNgram; },
         "Speculative decoding: ngram (drafts from the sequence's own prompt and output, where they pay) or off")
      ->check(CLI::IsMember({"ngram", "off"}))
      ->default_str(spec.mode == engine::SpecMode::kOff ? "off" : "ngram");
  cmd->add_option("--draft-max", spec.draft_max, "Draft tokens per sequence and step, at most")
      ->capture_default_str()->check(CLI::Range(1, engine::kMaxDrafts));
  cmd->add_option("--spec-ngram-min", spec.ngram_min, "Shortest suffix the n-gram drafter matches")
      ->capture_default_str()->check(CLI::Range(1, 64));
  cmd->add_option("--spec-ngram-max", spec.ngram_max, "Longest suffix the n-gram drafter matches (tried first)")
      ->capture_default_str()->check(CLI::Range(1, 64));
}

}  // namespace tokenmill::cli
