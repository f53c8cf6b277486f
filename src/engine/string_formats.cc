#include "engine/string_formats.h"

namespace tokenmill::engine {

namespace {

// Years 0001-9999; the leap ones (divisible by 4, centuries only by 400).
const std::string kYear = "(?:000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})";
const std::string kLeapYear = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)";
const std::string kMonthDay =
    "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))";
const std::string kDate = "(?:" + kYear + "-" + kMonthDay + "|" + kLeapYear + "-02-29)";
const std::string kTime =
    "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,6})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])";
const std::string kHex4 = "[0-9a-f]{1,4}";
const std::string kOctet = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
const std::string kLabel = "[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?";
const std::string kHostname = "(?:" + kLabel + "\\.){1,3}[a-z]{2,12}";

std::string duration() {
  auto part = [](char unit) { return std::string("[0-9]{1,4}") + unit; };
  const std::string date = "(?:" + part('Y') + "(?:" + part('M') + ")?(?:" + part('D') + ")?|" + part('M') + "(?:" +
                           part('D') + ")?|" + part('D') + ")";
  const std::string time = "T(?:" + part('H') + "(?:" + part('M') + ")?(?:" + part('S') + ")?|" + part('M') + "(?:" +
                           part('S') + ")?|" + part('S') + ")";
  return "P(?:" + date + "(?:" + time + ")?|" + time + "|" + part('W') + ")";
}

std::string ipv6() {
  const std::string group = kHex4, more = "(?::" + kHex4 + ")";
  return "(?:(?:" + group + ":){7}" + group + "|::(?:" + group + more + "{0,6})?|" + group + more + "{0,6}::|" + group +
         more + "{0,3}::" + group + more + "{0,2})";
}

}  // namespace

std::optional<std::string> format_pattern(std::string_view format) {
  std::string body;
  if (format == "date") body = kDate;
  else if (format == "time") body = kTime;
  else if (format == "date-time") body = kDate + "T" + kTime;
  else if (format == "duration") body = duration();
  else if (format == "uuid") body = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
  else if (format == "email") body = "[a-z0-9_%+-]{1,32}(?:\\.[a-z0-9_%+-]{1,32}){0,3}@" + kHostname;
  else if (format == "ipv4") body = "(?:" + kOctet + "\\.){3}" + kOctet;
  else if (format == "ipv6") body = ipv6();
  else if (format == "hostname") body = kHostname;
  else if (format == "uri") body = "[a-z][a-z0-9+.-]{0,15}://" + kHostname + "(?::[1-9][0-9]{0,3})?(?:/[a-zA-Z0-9._~-]{0,32}){0,6}(?:\\?[a-zA-Z0-9._~=&-]{0,64})?";
  else return std::nullopt;
  return "^" + body + "$";
}

}  // namespace tokenmill::engine
