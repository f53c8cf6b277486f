// Splits a Jinja template into text and tag tokens, applying whitespace control.
//
// Whitespace control follows Jinja 3 with the options HF sets for chat templates:
//   {%- / {{- / {#-   strip all whitespace before the tag
//   -%} / -}} / -#}   strip all whitespace after the tag
//   trim_blocks       drop the first newline after a %} or #}
//   lstrip_blocks     drop spaces and tabs between the start of a line and a {% or {#
//   {%+ / +%}         disable lstrip_blocks / trim_blocks for that tag
// One trailing newline of the template is dropped, as Jinja does by default.
// Comments are dropped here; {% raw %} ... {% endraw %} becomes one text token.
#pragma once

#include <string>
#include <vector>

namespace tokenmill::tokenizer::jinja {

struct Token {
  enum class Type {
    kText,        // literal template text
    kVarBegin,    // {{
    kVarEnd,      // }}
    kBlockBegin,  // {%
    kBlockEnd,    // %}
    kName,        // identifiers and keywords (if, and, true, ...)
    kString,      // a string literal, unescaped
    kInt,
    kFloat,
    kOperator,    // + - * / // % ** ~ == != < > <= >= = ( ) [ ] { } , . : |
    kEnd,         // end of template
  };
  Type type;
  std::string text;
  int line;  // 1-based line of the token's first character
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  // Jinja drops one newline at the very end of the template unless asked to keep it.
  bool keep_trailing_newline = false;
};

// Throws jinja::Error for an unterminated tag, comment or string, or a stray character.
std::vector<Token> lex(const std::string& source, const LexOptions& options);

}  // namespace tokenmill::tokenizer::jinja
