#include "engine/stop_strings.h"

#include <algorithm>

namespace tokenmill::engine {

StopStringFilter::StopStringFilter(std::vector<std::string> stops) {
  for (auto& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

StopStringFilter::Output StopStringFilter::push(std::string_view text) {
  pending_.append(text);
  Output out;
  // The earliest complete stop string ends the output.
  size_t first_stop = std::string::npos;
  for (const std::string& stop : stops_) first_stop = std::min(first_stop, pending_.find(stop));
  if (first_stop != std::string::npos) {
    out.text = pending_.substr(0, first_stop);
    out.stopped = true;
    pending_.clear();
    return out;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& stop : stops_) {
    for (size_t len = std::min(stop.size() - 1, pending_.size()); len > hold; --len) {
      if (pending_.compare(pending_.size() - len, len, stop, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  // Never split a UTF-8 character: move the cut back to a character boundary.
  size_t cut = pending_.size() - hold;
  while (cut > 0 && cut < pending_.size() && (static_cast<unsigned char>(pending_[cut]) & 0xC0) == 0x80) --cut;
  out.text = pending_.substr(0, cut);
  pending_.erase(0, cut);
  return out;
}

std::string StopStringFilter::flush() {
  std::string rest;
  rest.swap(pending_);
  return rest;
}

}  // namespace tokenmill::engine
