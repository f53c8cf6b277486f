// Parses lexed Jinja tokens into a statement tree.
//
// Supported tags: if/elif/else, for (with "if" filter, else branch, tuple targets), set
// (names, tuples, ns.attr, block form), macro, break/continue (HF enables loopcontrols),
// filter blocks, raw (in the lexer) and HF's {% generation %}. Anything else is an
// error naming the tag and its line.
#pragma once

#include <vector>

#include "tokenizer/jinja_ast.h"
#include "tokenizer/jinja_lexer.h"

namespace tokenmill::tokenizer::jinja {

// Throws jinja::Error ("line N: ...") on a syntax error.
Body parse(const std::vector<Token>& tokens);

}  // namespace tokenmill::tokenizer::jinja
