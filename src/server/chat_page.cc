#include "server/chat_page.h"

namespace tokenmill::server {

std::string_view chat_page_html() {
  static constexpr std::string_view kPage =
#include "server/chat_page.inc"
      ;
  return kPage;
}

}  // namespace tokenmill::server
