// Turns a choice's decoded text into what may be sent: text that could still be the
// start of a stop string is held back until the next token settles it, and a completed
// stop string ends the choice with everything before it (the stop string itself is
// never sent).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tokenmill::engine {

class StopStringFilter {
 public:
  explicit StopStringFilter(std::vector<std::string> stops);

  struct Output {
    std::string text;       // safe to send now
    bool stopped = false;   // a stop string was completed; nothing more will come
  };
  // Adds newly decoded text.
  Output push(std::string_view text);
  // The held-back text, when the choice ends for another reason.
  std::string flush();

 private:
  std::vector<std::string> stops_;
  std::string pending_;  // text not yet sent
};

}  // namespace tokenmill::engine
