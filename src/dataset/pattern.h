// A regular expression (PCRE2, UTF-8, Unicode classes) with a bound on the work one
// match may do, so that a pattern that backtracks badly fails the match rather than
// hanging the run.
//
// Thread-safety: search() may run on many threads at once (each call has its own match data).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tokenmill::dataset {

class Pattern {
 public:
  // InvalidArgument naming the offset of the error.
  static Result<Pattern> compile(const std::string& pattern, bool ignore_case = false);
  // Whether the pattern matches anywhere in text (a match that runs out of its work
  // bound counts as none).
  bool search(std::string_view text) const;
  const std::string& source() const { return source_; }

 private:
  struct Code;
  Pattern(std::string source, std::shared_ptr<Code> code) : source_(std::move(source)), code_(std::move(code)) {}
  std::string source_;
  std::shared_ptr<Code> code_;
};

}  // namespace tokenmill::dataset
