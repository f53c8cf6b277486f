// A URL's query string ("a=1&metadata%5Bteam%5D=x") as decoded key-value pairs, in order.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tokenmill::server {

using QueryPairs = std::vector<std::pair<std::string, std::string>>;

// %XX and '+' decoded; a malformed escape is kept as it is.
QueryPairs parse_query(const std::string& query);
// The first value of key ("" when absent).
std::string query_value(const QueryPairs& pairs, const std::string& key);

}  // namespace tokenmill::server
