#include "server/http_types.h"

#include <unistd.h>

#include "server/api_error.h"

namespace tokenmill::server {

void Responder::send_file(int status, const std::string& content_type, int fd, int64_t size,
                          const HeaderList& extra) {
  std::string body(static_cast<size_t>(size), '\0');
  size_t done = 0;
  while (done < body.size()) {
    const ssize_t n = ::pread(fd, body.data() + done, body.size() - done, static_cast<off_t>(done));
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (done < body.size()) {
    send(500, "application/json", openai_error_body(server_error("The file could not be read")));
    return;
  }
  send(status, content_type, std::move(body), extra);
}

}  // namespace tokenmill::server
