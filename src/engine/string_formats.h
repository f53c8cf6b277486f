// JSON Schema's string `format`s that structured outputs enforce, each as the regular
// expression (engine/regex_grammar.h) of the strings written for it. Each describes
// valid values only (a date's day exists in its month, 29 February only in leap years,
// IPv4 octets at most 255 without leading zeros), though not every valid spelling: an
// email's local part without quotes, a URI with a scheme and an authority, an IPv6
// address without an embedded IPv4 tail.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tokenmill::engine {

// The anchored pattern for a format, or nullopt for a format we do not enforce.
std::optional<std::string> format_pattern(std::string_view format);

}  // namespace tokenmill::engine
