#include "dataset/example_filter.h"

#include <algorithm>
#include <cctype>
#include <unordered_set>

#include "dataset/text.h"

namespace tokenmill::dataset {

namespace {

// Runs of whitespace become one space; none at the ends.
std::string normalize_space(const std::string& s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace

const std::vector<std::string> kRefusalPhrases = {
    "i'm sorry, but",   "i am sorry, but",     "i cannot help",   "i can't help",      "i can not help",
    "i cannot assist",  "i can't assist",      "i cannot provide", "i can't provide",  "i'm unable to",
    "i am unable to",   "i'm not able to",     "i am not able to", "as an ai",          "as a language model",
    "i won't be able to", "i must decline",    "i cannot comply",  "i can't comply",    "i'm not comfortable",
};

const std::vector<std::string>& ExampleFilter::names() {
  static const std::vector<std::string> kNames = {"truncated", "min_length", "max_length", "require",
                                                  "reject",    "refusal",    "repetition", "json",
                                                  "duplicate", "near_duplicate"};
  return kNames;
}

Result<std::unique_ptr<ExampleFilter>> ExampleFilter::create(const FilterConfig& config) {
  if (config.min_chars < 0 || config.max_chars < config.min_chars) {
    return invalid_argument("the length bounds need 0 <= min <= max");
  }
  if (config.max_repeat_ratio < 0 || config.max_repeat_ratio > 1) {
    return invalid_argument("the repeated n-gram ratio is between 0 and 1");
  }
  if (config.repeat_ngram < 1 || config.repeat_ngram > 16) return invalid_argument("the n-gram length is 1 to 16");
  if (config.near_duplicate < 0 || config.near_duplicate > 1) {
    return invalid_argument("the near-duplicate similarity is between 0 and 1");
  }
  std::unique_ptr<ExampleFilter> filter(new ExampleFilter(config));
  for (const std::string& p : config.require) {
    auto compiled = Pattern::compile(p);
    if (!compiled.ok()) return compiled.status();
    filter->require_.push_back(std::move(compiled).value());
  }
  for (const std::string& p : config.reject) {
    auto compiled = Pattern::compile(p);
    if (!compiled.ok()) return compiled.status();
    filter->reject_.push_back(std::move(compiled).value());
  }
  if (config.json_schema) {
    auto validator = JsonValidator::create(*config.json_schema);
    if (!validator.ok()) return validator.status();
    filter->validator_.emplace(std::move(validator).value());
  }
  return filter;
}

ExampleFilter::ExampleFilter(const FilterConfig& config) : config_(config) {
  if (config.refusals) {
    refusals_ = kRefusalPhrases;
    for (const std::string& p : config.refusal_phrases) refusals_.push_back(lower_ascii(p));
  }
  if (config.near_duplicate > 0) near_ = std::make_unique<NearDuplicates>(config.near_duplicate);
}

double ExampleFilter::repeat_ratio(const std::string& text, int n) {
  const std::vector<std::string> words = lowercase_words(text);
  if (static_cast<int>(words.size()) < n) return 0;
  std::unordered_set<std::string> seen;
  size_t total = 0, repeated = 0;
  for (size_t i = 0; i + static_cast<size_t>(n) <= words.size(); ++i) {
    std::string gram;
    for (int k = 0; k < n; ++k) gram += words[i + static_cast<size_t>(k)] + ' ';
    ++total;
    repeated += !seen.insert(gram).second;
  }
  return static_cast<double>(repeated) / static_cast<double>(total);
}

std::optional<Json> ExampleFilter::answer_json(const std::string& answer) {
  Json whole = Json::parse(answer, nullptr, /*allow_exceptions=*/false);
  if (!whole.is_discarded()) return whole;
  const size_t open = answer.find("```");
  if (open == std::string::npos) return std::nullopt;
  const size_t body = answer.find('\n', open);
  const size_t close = body == std::string::npos ? std::string::npos : answer.find("```", body);
  if (close == std::string::npos || answer.find("```", close + 3) != std::string::npos) return std::nullopt;
  Json fenced = Json::parse(answer.substr(body + 1, close - body - 1), nullptr, false);
  if (fenced.is_discarded()) return std::nullopt;
  return fenced;
}

std::string ExampleFilter::check(const Example& e) {
  if (!config_.keep_truncated && e.finish_reason == "length") return "truncated";
  const int64_t length = code_points(e.answer);
  if (length < config_.min_chars) return "min_length";
  if (length > config_.max_chars) return "max_length";
  for (const Pattern& p : require_) {
    if (!p.search(e.answer)) return "require";
  }
  for (const Pattern& p : reject_) {
    if (p.search(e.answer)) return "reject";
  }
  if (!refusals_.empty()) {
    const std::string lowered = lower_ascii(normalize_space(e.answer));
    for (const std::string& phrase : refusals_) {
      if (lowered.find(phrase) != std::string::npos) return "refusal";
    }
  }
  if (config_.max_repeat_ratio < 1 && repeat_ratio(e.answer, config_.repeat_ngram) > config_.max_repeat_ratio) {
    return "repetition";
  }
  if (config_.json || validator_) {
    const std::optional<Json> value = answer_json(e.answer);
    if (!value || (validator_ && !validator_->validate(*value).empty())) return "json";
  }
  if (config_.dedup && !seen_.insert(normalize_space(e.messages.dump()) + '\0' + normalize_space(e.answer)).second) {
    return "duplicate";
  }
  if (near_ && near_->seen_or_add(e.answer)) return "near_duplicate";
  return "";
}

}  // namespace tokenmill::dataset
