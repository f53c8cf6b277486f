// A parsed Jinja template and its evaluator.
//
// Template is immutable after parse() and safe to render from many threads at once:
// each render() keeps its state (scopes, output) on its own stack.
#pragma once

#include <memory>
#include <string>

#include "tokenizer/jinja_ast.h"
#include "tokenizer/jinja_lexer.h"
#include "tokenizer/jinja_value.h"

namespace tokenmill::tokenizer::jinja {

class Template {
 public:
  // Lexes, parses and checks that every filter and test used exists. Throws jinja::Error
  // naming the line and the construct.
  static Template parse(const std::string& source, const LexOptions& options = {});

  // Renders with `variables` as the template's globals, on top of the built-ins
  // (raise_exception, range, namespace, ...). Throws jinja::Error ("line N: ...").
  std::string render(const Dict& variables) const;

 private:
  std::shared_ptr<const Body> body_;
};

}  // namespace tokenmill::tokenizer::jinja
