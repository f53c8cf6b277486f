#include "server/reasoning.h"

#include <algorithm>
#include <climits>

namespace tokenmill::server {

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

size_t skip_space(std::string_view text, size_t from = 0) {
  while (from < text.size() && is_space(text[from])) ++from;
  return from;
}

std::string_view trim_end(std::string_view text) {
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

// Template variables the routes set themselves.
constexpr const char* kReservedVariables[] = {"messages", "tools", "add_generation_prompt", "bos_token", "eos_token"};

}  // namespace

ReasoningOptions read_openai_reasoning(const Fields& f) {
  ReasoningOptions options;
  if (auto effort = f.string("reasoning_effort")) {
    static constexpr const char* kEfforts[] = {"none", "minimal", "low", "medium", "high"};
    if (std::find(std::begin(kEfforts), std::end(kEfforts), *effort) == std::end(kEfforts)) {
      throw bad_request("'reasoning_effort' must be one of none, minimal, low, medium, high; found " + dump_json(*effort),
                        "reasoning_effort");
    }
    options.effort = *effort;
    options.think = *effort != "none";
  }
  options.include = options.think && f.boolean("include_reasoning").value_or(true);
  if (auto budget = f.integer("thinking_token_budget", 0, INT32_MAX)) options.budget = static_cast<int32_t>(*budget);
  if (const Json* kwargs = f.object("chat_template_kwargs")) {
    for (const char* name : kReservedVariables) {
      if (kwargs->contains(name)) {
        throw bad_request(std::string("'chat_template_kwargs' may not set '") + name + "': the server sets it",
                          "chat_template_kwargs");
      }
    }
    options.template_kwargs = *kwargs;
    if (auto it = kwargs->find("enable_thinking"); it != kwargs->end() && *it == false) {
      options.think = false;
      options.include = false;
    }
  }
  return options;
}

ReasoningOptions read_ollama_reasoning(const Fields& f) {
  ReasoningOptions options;
  const Json* think = f.raw("think");
  if (think == nullptr) return options;
  if (think->is_boolean()) {
    options.think = options.include = think->get<bool>();
    return options;
  }
  if (think->is_string() && (*think == "low" || *think == "medium" || *think == "high")) {
    options.effort = think->get<std::string>();
    return options;
  }
  throw bad_request("'think' must be true, false, \"low\", \"medium\" or \"high\"; found " + dump_json(*think), "think");
}

Json reasoning_template_variables(const ReasoningOptions& options) {
  Json variables = options.template_kwargs;
  if (!options.think && !variables.contains("enable_thinking")) variables["enable_thinking"] = false;
  if (!options.effort.empty() && options.effort != "none" && !variables.contains("reasoning_effort")) {
    variables["reasoning_effort"] = options.effort;
  }
  return variables;
}

std::shared_ptr<engine::ReasoningSpec> reasoning_for_template(std::string_view template_source) {
  auto spec = std::make_shared<engine::ReasoningSpec>();
  if (template_source.find(spec->open) == std::string_view::npos) return nullptr;
  return spec;
}

bool prompt_opens_reasoning(std::string_view prompt, const engine::ReasoningSpec& spec) {
  return trim_end(prompt).ends_with(spec.open);
}

ReasoningSplitter::ReasoningSplitter(const engine::ReasoningSpec& spec)
    : open_(spec.open), close_(spec.close), phase_(spec.opened_by_prompt ? Phase::kReasoning : Phase::kLead) {}

ReasoningSplitter::Parts ReasoningSplitter::feed(std::string_view text) {
  Parts out;
  if (phase_ == Phase::kContent) {
    out.content = text;
    return out;
  }
  pending_.append(text);
  if (phase_ == Phase::kLead) {
    const size_t first = skip_space(pending_);
    const std::string_view rest = std::string_view(pending_).substr(first);
    if (rest.size() < open_.size() && std::string_view(open_).starts_with(rest)) return out;  // may be the tag
    if (!rest.starts_with(open_)) {
      phase_ = Phase::kContent;
      out.content = rest;
      pending_.clear();
      return out;
    }
    pending_.erase(0, first + open_.size());
    phase_ = Phase::kReasoning;
  }
  if (phase_ == Phase::kReasoning) feed_reasoning(out);
  if (phase_ == Phase::kGap) {
    const size_t first = skip_space(pending_);
    if (first < pending_.size()) {
      phase_ = Phase::kContent;
      out.content.append(pending_, first);
    }
    pending_.clear();
  }
  return out;
}

void ReasoningSplitter::feed_reasoning(Parts& out) {
  const size_t start = reasoning_begun_ ? 0 : skip_space(pending_);
  if (const size_t at = pending_.find(close_); at != std::string::npos) {
    if (start < at) out.reasoning.append(trim_end(std::string_view(pending_).substr(start, at - start)));
    pending_.erase(0, at + close_.size());
    phase_ = Phase::kGap;
    return;
  }
  // Hold back what may begin the close tag, and the whitespace before it (trimmed if the
  // tag follows).
  size_t keep = pending_.size();
  for (size_t n = std::min(close_.size() - 1, pending_.size()); n > 0; --n) {
    if (std::string_view(pending_).ends_with(std::string_view(close_).substr(0, n))) {
      keep = pending_.size() - n;
      break;
    }
  }
  while (keep > start && is_space(pending_[keep - 1])) --keep;
  if (keep > start) {
    out.reasoning.append(pending_, start, keep - start);
    reasoning_begun_ = true;
    pending_.erase(0, keep);
  }
}

ReasoningSplitter::Parts ReasoningSplitter::finish() {
  Parts out;
  if (phase_ == Phase::kLead) {
    out.content = pending_.substr(skip_space(pending_));
  } else if (phase_ == Phase::kReasoning) {
    const size_t start = reasoning_begun_ ? 0 : skip_space(pending_);
    out.reasoning = trim_end(std::string_view(pending_).substr(start));
  }
  pending_.clear();
  phase_ = Phase::kContent;
  return out;
}

ReasoningSplitter::Parts split_reasoning(std::string_view text, const engine::ReasoningSpec& spec) {
  ReasoningSplitter splitter(spec);
  ReasoningSplitter::Parts parts = splitter.feed(text);
  ReasoningSplitter::Parts rest = splitter.finish();
  parts.reasoning += rest.reasoning;
  parts.content += rest.content;
  return parts;
}

}  // namespace tokenmill::server
