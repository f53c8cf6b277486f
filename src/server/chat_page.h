// The chat page tokenmill serves at / to browsers (src/server/chat_page.html, built into
// the binary): one self-contained HTML file, no external assets.
#pragma once

#include <string_view>

namespace tokenmill::server {

std::string_view chat_page_html();

}  // namespace tokenmill::server
