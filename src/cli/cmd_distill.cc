// tokenmill distill: a teacher's answers turned into training data for a student. The
// answers come from a prompts file run through the offline batch path on a teacher model
// (resumable: its results are kept beside the output), from a batch's input and output
// files, or from stored completions selected by metadata; the filters of
// dataset/example_filter.h keep or drop each; the kept ones are written in a fine-tuning
// layout (dataset/training_format.h), with a summary of what each filter dropped.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/durable_file.h"
#include "cli/chat_engine_options.h"
#include "cli/commands.h"
#include "cli/offline_models.h"
#include "dataset/example_filter.h"
#include "dataset/exchanges.h"
#include "dataset/training_format.h"
#include "server/offline_batch.h"
#include "state/batch_state.h"

namespace tokenmill::cli {

namespace {

using dataset::Json;

struct DistillOptions {
  std::string output;
  std::string format = "messages";
  // Sources (exactly one).
  std::string prompts;
  std::string batch_input, batch_output;
  bool stored = false;
  std::string data_dir;
  std::vector<std::string> metadata;  // key=value
  std::string stored_model;
  // The teacher run.
  std::string teacher = "default";
  std::string teacher_output;  // "": OUTPUT.teacher.jsonl
  dataset::TeacherParams teacher_params;
  double temperature = -1;  // < 0: 0 for one sample, 0.8 for several
  ChatEngineOptions engine;
  // The filters.
  dataset::FilterConfig filters;
  std::string json_schema;
  std::string summary_json;
  bool with_reasoning = false;  // a thinking teacher's reasoning goes before each answer
  bool quiet = false;
};

std::atomic<bool> g_interrupted{false};

void on_interrupt(int) {
  g_interrupted.store(true);
  std::signal(SIGINT, SIG_DFL);
}

int fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

Result<std::vector<Json>> read_json_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read '" + path + "'");
  std::vector<Json> out;
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Json j = Json::parse(line, nullptr, false);
    if (!j.is_object()) return invalid_argument(path + " line " + std::to_string(n) + ": not a JSON object");
    out.push_back(std::move(j));
  }
  return out;
}

// Examples of a batch: each output line's answers, with the request of the input line
// that has its custom_id.
Result<std::vector<dataset::Example>> batch_examples(const std::string& input, const std::string& output) {
  auto requests = read_json_lines(input);
  if (!requests.ok()) return requests.status();
  auto results = read_json_lines(output);
  if (!results.ok()) return results.status();
  std::map<std::string, Json> by_id;
  for (const Json& r : *requests) {
    if (r.contains("custom_id") && r["custom_id"].is_string() && r.contains("body")) {
      by_id[r["custom_id"].get<std::string>()] = r["body"];
    }
  }
  std::vector<dataset::Example> out;
  for (const Json& row : *results) {
    const std::string id = row.value("custom_id", "");
    const auto request = by_id.find(id);
    if (request == by_id.end()) continue;
    const Json response = row.contains("response") ? row["response"] : Json();
    if (!response.is_object() || response.value("status_code", 0) != 200) continue;
    for (dataset::Example& e : dataset::examples_from_exchange(id, request->second, response.value("body", Json()))) {
      out.push_back(std::move(e));
    }
  }
  return out;
}

Result<std::vector<dataset::Example>> stored_examples(const DistillOptions& o) {
  const std::string dir = o.data_dir.empty() ? state::BatchState::default_dir() : o.data_dir;
  auto state = state::BatchState::open_for_reading(dir);
  if (!state.ok()) return state.status();
  std::vector<std::pair<std::string, std::string>> metadata;
  for (const std::string& pair : o.metadata) {
    const size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) return invalid_argument("--metadata takes KEY=VALUE, not '" + pair + "'");
    metadata.emplace_back(pair.substr(0, eq), pair.substr(eq + 1));
  }
  std::vector<dataset::Example> out;
  std::string after;
  while (true) {
    const auto page = (*state)->list_completions(o.stored_model, metadata, after, 1000, /*newest_first=*/false);
    for (size_t i = 0; i < page.size() && i < 1000; ++i) {
      const Json request = Json::parse(page[i].request, nullptr, false);
      const Json response = Json::parse(page[i].response, nullptr, false);
      for (dataset::Example& e : dataset::examples_from_exchange(page[i].id, request, response)) out.push_back(std::move(e));
    }
    if (page.size() <= 1000) break;
    after = page[999].id;
  }
  return out;
}

// Runs the prompts through the teacher with the offline batch path; its results stay in
// teacher_output, so that an interrupted run resumes.
Result<std::vector<dataset::Example>> teacher_examples(const DistillOptions& o) {
  auto prompts = dataset::read_prompts(o.prompts);
  if (!prompts.ok()) return prompts.status();
  const std::string results = o.teacher_output.empty() ? o.output + ".teacher.jsonl" : o.teacher_output;
  const std::string requests = results + ".requests";
  {
    std::string lines;
    for (size_t i = 0; i < prompts->size(); ++i) {
      lines += dataset::teacher_request("p" + std::to_string(i + 1), (*prompts)[i], o.teacher_params).dump() + "\n";
    }
    if (Status s = write_file_durably(requests, lines); !s.ok()) return s;
  }
  auto models = OfflineModels::load(o.engine, o.teacher, /*verbose=*/false);
  if (!models.ok()) return models.status();
  server::OfflineBatchConfig config;
  config.input = requests;
  config.output = results;
  config.model = (*models)->model_name();
  if (!o.quiet) {
    std::fprintf(stderr, "teacher %s: %zu prompts x %d samples, results in %s\n", config.model.c_str(),
                 prompts->size(), o.teacher_params.samples, results.c_str());
  }
  std::signal(SIGINT, on_interrupt);
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto run = server::run_offline_batch(
      (*models)->context(), (*models)->strand(), config,
      [&](const server::OfflineBatchProgress& p) {
        if (o.quiet || !tty) return;
        std::fprintf(stderr, "\r  %lld/%lld prompts answered\033[K",
                     static_cast<long long>(p.already_done + p.completed + p.failed), static_cast<long long>(p.total));
      },
      g_interrupted);
  std::signal(SIGINT, SIG_DFL);
  if (!o.quiet && tty) std::fprintf(stderr, "\n");
  if (!run.ok()) return run.status();
  if (run->already_done + run->completed + run->failed < run->total) {
    return resource_exhausted("interrupted: run the same command again to finish the teacher's answers");
  }
  auto examples = batch_examples(requests, results);
  if (!examples.ok()) return examples.status();
  for (dataset::Example& e : *examples) {  // the Alpaca fields of instruction prompts
    const size_t index = std::stoul(e.source.substr(1, e.source.find('#') - 1)) - 1;
    if (index < prompts->size()) {
      e.instruction = (*prompts)[index].instruction;
      e.input = (*prompts)[index].input;
    }
  }
  return examples;
}

int run_distill(DistillOptions o) {
  const int n_sources = !o.prompts.empty() + !o.batch_input.empty() + o.stored;
  if (n_sources != 1) return fail("give one source: --prompts, --batch-input with --batch-output, or --stored");
  if (o.batch_input.empty() != o.batch_output.empty()) return fail("--batch-input and --batch-output go together");
  auto format = dataset::parse_training_format(o.format);
  if (!format.ok()) return fail("--format: " + format.status().message());
  if (!o.json_schema.empty()) {
    std::ifstream in(o.json_schema);
    std::stringstream text;
    text << in.rdbuf();
    Json schema = Json::parse(text.str(), nullptr, false);
    if (!in || schema.is_discarded()) return fail("--json-schema: '" + o.json_schema + "' is not a readable JSON file");
    o.filters.json_schema = std::move(schema);
  }
  auto filter = dataset::ExampleFilter::create(o.filters);
  if (!filter.ok()) return fail(filter.status().message());
  o.teacher_params.temperature = o.temperature >= 0 ? o.temperature : o.teacher_params.samples > 1 ? 0.8 : 0.0;

  Result<std::vector<dataset::Example>> examples =
      !o.prompts.empty() ? teacher_examples(o)
      : o.stored         ? stored_examples(o)
                         : batch_examples(o.batch_input, o.batch_output);
  if (!examples.ok()) return fail(examples.status().message());

  std::map<std::string, int64_t> dropped;
  std::string lines;
  int64_t kept = 0;
  const bool with_logprobs = o.teacher_params.top_logprobs > 0;
  for (const dataset::Example& e : *examples) {
    const std::string why = (*filter)->check(e);
    if (!why.empty()) {
      ++dropped[why];
      continue;
    }
    ++kept;
    lines += dataset::training_record(e, *format, with_logprobs, o.with_reasoning).dump(-1, ' ', false, Json::error_handler_t::replace);
    lines += '\n';
  }
  if (Status s = write_file_durably(o.output, lines); !s.ok()) return fail(s.message());

  Json summary = {{"read", examples->size()}, {"kept", kept}, {"dropped", Json::object()}, {"output", o.output},
                  {"format", o.format}};
  std::fprintf(stderr, "%zu answers read, %lld kept, %lld dropped\n", examples->size(), static_cast<long long>(kept),
               static_cast<long long>(static_cast<int64_t>(examples->size()) - kept));
  for (const std::string& name : dataset::ExampleFilter::names()) {
    summary["dropped"][name] = dropped[name];
    if (dropped[name] > 0) std::fprintf(stderr, "  %-15s %lld\n", name.c_str(), static_cast<long long>(dropped[name]));
  }
  if (!o.summary_json.empty()) {
    if (Status s = write_file_durably(o.summary_json, summary.dump(2) + "\n"); !s.ok()) return fail(s.message());
  }
  return 0;
}

}  // namespace

void register_distill(CLI::App& app) {
  auto o = std::make_shared<DistillOptions>();
  CLI::App* cmd = app.add_subcommand("distill", "Turn a teacher's answers into filtered training data for a student");
  cmd->add_option("-o,--output", o->output, "The training records (JSONL)")->required();
  cmd->add_option("--format", o->format, "alpaca, sharegpt or messages")->capture_default_str();
  auto prompts = cmd->add_option("--prompts", o->prompts,
                                 "JSONL of prompts ({messages}, {prompt} or {instruction, input}) for the teacher");
  cmd->add_option("--batch-input", o->batch_input, "A batch's input file (its requests)")->excludes(prompts);
  cmd->add_option("--batch-output", o->batch_output, "... and its output file (the answers)");
  cmd->add_flag("--stored", o->stored, "Read stored completions (store: true) from the data directory");
  cmd->add_option("--data-dir", o->data_dir, "With --stored: the server's --data-dir");
  cmd->add_option("--metadata", o->metadata, "With --stored: only completions whose metadata has KEY=VALUE");
  cmd->add_option("--stored-model", o->stored_model, "With --stored: only completions of this model");
  cmd->add_option("-m,--teacher", o->teacher, "With --prompts: the teacher model (a GGUF file or a store name)")
      ->capture_default_str();
  cmd->add_option("--teacher-output", o->teacher_output,
                  "With --prompts: where the teacher's answers are kept (default: OUTPUT.teacher.jsonl); a rerun "
                  "asks only for the missing ones");
  cmd->add_option("--samples", o->teacher_params.samples, "Answers per prompt")->capture_default_str()
      ->check(CLI::Range(1, 8));
  cmd->add_option("--max-tokens", o->teacher_params.max_tokens, "Tokens per answer at most")->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--temperature", o->temperature, "The teacher's temperature (default: 0, or 0.8 with --samples > 1)")
      ->check(CLI::Range(0.0, 2.0));
  cmd->add_option("--top-p", o->teacher_params.top_p, "The teacher's top_p")->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--seed", o->teacher_params.seed, "Seed of the teacher's sampling (-1: none)")->capture_default_str();
  cmd->add_option("--top-logprobs", o->teacher_params.top_logprobs,
                  "Keep each answer token's top-K logprobs (by token id) in a 'logprobs' field, for logit "
                  "distillation")
      ->check(CLI::Range(0, 20));
  cmd->add_flag("--keep-truncated", o->filters.keep_truncated, "Keep answers cut by max_tokens");
  cmd->add_option("--min-length", o->filters.min_chars, "Drop answers of fewer characters");
  cmd->add_option("--max-length", o->filters.max_chars, "Drop answers of more characters");
  cmd->add_option("--require", o->filters.require, "Drop answers this regular expression does not match (repeatable)");
  cmd->add_option("--reject", o->filters.reject, "Drop answers this regular expression matches (repeatable)");
  cmd->add_flag("--refusals", o->filters.refusals, "Drop answers that refuse (\"I'm sorry, but\", \"As an AI\", ...)");
  cmd->add_option("--refusal-phrase", o->filters.refusal_phrases, "With --refusals: one more phrase (repeatable)");
  cmd->add_option("--max-repeat-ratio", o->filters.max_repeat_ratio,
                  "Drop answers in which more than this share of word n-grams repeat (1: off)")
      ->capture_default_str();
  cmd->add_option("--repeat-ngram", o->filters.repeat_ngram, "The n of --max-repeat-ratio")->capture_default_str();
  cmd->add_flag("--json", o->filters.json, "Drop answers that are not JSON (a single ``` fenced block counts)");
  cmd->add_option("--json-schema", o->json_schema, "Drop answers that are not JSON valid against this schema file");
  cmd->add_flag("--dedup", o->filters.dedup, "Drop repeats of a prompt and answer kept before");
  cmd->add_option("--near-dedup", o->filters.near_duplicate,
                  "Drop answers this similar (estimated Jaccard of word 3-grams, e.g. 0.8) to one kept before");
  cmd->add_option("--summary-json", o->summary_json, "Also write the kept / dropped counts here");
  cmd->add_flag("--with-reasoning", o->with_reasoning,
                "Keep a thinking teacher's reasoning, before each answer as <think>...</think> (default: the answer "
                "alone; the filters judge the answer alone either way)");
  cmd->add_flag("-q,--quiet", o->quiet, "No progress while the teacher answers");
  add_chat_engine_options(cmd, o->engine);
  cmd->callback([o] { exit_code() = run_distill(*o); });
}

}  // namespace tokenmill::cli
