#define PCRE2_CODE_UNIT_WIDTH 8
#include "dataset/pattern.h"

#include <pcre2.h>

namespace tokenmill::dataset {

namespace {

constexpr uint32_t kMatchLimit = 10'000'000;  // backtracking steps per search

}  // namespace

struct Pattern::Code {
  pcre2_code* code = nullptr;
  pcre2_match_context* context = nullptr;
  ~Code() {
    pcre2_match_context_free(context);
    pcre2_code_free(code);
  }
};

Result<Pattern> Pattern::compile(const std::string& pattern, bool ignore_case) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  const uint32_t options = PCRE2_UTF | PCRE2_UCP | (ignore_case ? PCRE2_CASELESS : 0);
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &error,
                                   &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    return invalid_argument("regular expression '" + pattern + "' at offset " + std::to_string(offset) + ": " +
                            reinterpret_cast<const char*>(message));
  }
  auto compiled = std::make_shared<Code>();
  compiled->code = code;
  compiled->context = pcre2_match_context_create(nullptr);
  pcre2_set_match_limit(compiled->context, kMatchLimit);
  return Pattern(pattern, std::move(compiled));
}

bool Pattern::search(std::string_view text) const {
  pcre2_match_data* match = pcre2_match_data_create_from_pattern(code_->code, nullptr);
  // PCRE2_NO_UTF_CHECK is not set: text that is not UTF-8 fails the match instead of
  // reading past a character.
  const int rc = pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0, 0, match,
                             code_->context);
  pcre2_match_data_free(match);
  return rc >= 0;
}

}  // namespace tokenmill::dataset
