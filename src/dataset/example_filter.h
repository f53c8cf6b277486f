// The filters `tokenmill distill` keeps or drops each example by, in this order (an
// example dropped by one is counted against that one only):
//   truncated      the answer stopped at max_tokens (finish_reason "length")
//   min_length     fewer characters (code points) than min_chars
//   max_length     more than max_chars
//   require        a pattern of `require` does not match
//   reject         a pattern of `reject` matches
//   refusal        the answer holds a refusal phrase (case-insensitive)
//   repetition     the share of repeated word n-grams is above max_repeat_ratio
//   json           the answer (or its one fenced code block) is not JSON, or not valid
//                  against the schema
//   duplicate      the same prompt and answer (whitespace-normalized) was kept before
//   near_duplicate an answer kept before is this similar (NearDuplicates)
//
// Thread-safety: none (the duplicate filters remember what was kept).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "dataset/example.h"
#include "dataset/json_validator.h"
#include "dataset/near_duplicates.h"
#include "dataset/pattern.h"

namespace tokenmill::dataset {

struct FilterConfig {
  bool keep_truncated = false;
  int64_t min_chars = 0;
  int64_t max_chars = INT64_MAX;
  std::vector<std::string> require;  // PCRE2 patterns, each must match
  std::vector<std::string> reject;   // PCRE2 patterns, none may match
  bool refusals = false;             // drop answers with a phrase of kRefusalPhrases or refusal_phrases
  std::vector<std::string> refusal_phrases;
  double max_repeat_ratio = 1.0;  // 1: off
  int repeat_ngram = 3;
  bool json = false;
  std::optional<Json> json_schema;  // implies json
  bool dedup = false;
  double near_duplicate = 0;  // estimated Jaccard similarity; 0: off
};

// The phrases `refusals` looks for besides the configured ones.
extern const std::vector<std::string> kRefusalPhrases;

class ExampleFilter {
 public:
  // InvalidArgument for a pattern that does not compile, a bad schema or bad bounds.
  static Result<std::unique_ptr<ExampleFilter>> create(const FilterConfig& config);

  // "" when the example is kept (and remembered for the duplicate filters); else the
  // name of the filter that drops it.
  std::string check(const Example& example);

  // Every filter's name, in the order they apply.
  static const std::vector<std::string>& names();

  // Share of word n-grams of text that repeat an earlier one (0 for fewer than n words).
  static double repeat_ratio(const std::string& text, int n);
  // The JSON an answer holds: the whole answer, or its one ``` fenced block; nullopt if none.
  static std::optional<Json> answer_json(const std::string& answer);

 private:
  explicit ExampleFilter(const FilterConfig& config);

  FilterConfig config_;
  std::vector<Pattern> require_, reject_;
  std::vector<std::string> refusals_;  // lowercased
  std::optional<JsonValidator> validator_;
  std::unordered_set<std::string> seen_;
  std::unique_ptr<NearDuplicates> near_;
};

}  // namespace tokenmill::dataset
