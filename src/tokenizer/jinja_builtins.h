// The built-in filters, tests, object methods and global functions of the Jinja subset.
// All of them throw jinja::Error (without a line; the evaluator adds it) on bad input.
#pragma once

#include <string>

#include "tokenizer/jinja_value.h"

namespace tokenmill::tokenizer::jinja {

// ---- filters (jinja_filters.cc) ----
bool is_known_filter(const std::string& name);
// {{ operand | name(args) }}.
Value apply_filter(const std::string& name, const Value& operand, const CallArgs& args);

// ---- tests (jinja_filters.cc) ----
bool is_known_test(const std::string& name);
// {{ operand is name(args) }}.
bool apply_test(const std::string& name, const Value& operand, const CallArgs& args);

// ---- methods and globals (jinja_methods.cc) ----
// A bound method of a string, dict or list ("abc".upper, d.items), or Undefined when the
// object has no method of that name.
Value find_method(const Value& object, const std::string& name);
// raise_exception, range, namespace, dict, strftime_now.
Dict builtin_globals();

// Shared helpers.
// Python-style len(): code points of a string, items of a list or dict.
int64_t length_of(const Value& v);
// The items a for loop or list() visits: list items, dict keys, string characters.
List iterate(const Value& v);
// Python str.upper()/lower()/title()/capitalize() for ASCII, Latin-1, Greek and Cyrillic.
std::string to_upper(const std::string& s);
std::string to_lower(const std::string& s);
std::string to_title(const std::string& s);
std::string capitalize(const std::string& s);
// Python str.strip(chars) family; chars empty means whitespace. which: 'l', 'r' or 'b'.
std::string strip(const std::string& s, const std::string& chars, char which);

}  // namespace tokenmill::tokenizer::jinja
