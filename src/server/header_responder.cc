#include "server/header_responder.h"

#include <utility>

namespace tokenmill::server {

namespace {

// Forwards everything to the connection's Responder, adding the headers to the answer.
class HeaderResponder : public Responder {
 public:
  HeaderResponder(std::shared_ptr<Responder> inner, HeaderList headers)
      : inner_(std::move(inner)), headers_(std::move(headers)) {}

  void send(int status, const std::string& content_type, std::string body, const HeaderList& extra) override {
    inner_->send(status, content_type, std::move(body), joined(extra));
  }
  void begin_stream(int status, const std::string& content_type, const HeaderList& extra) override {
    inner_->begin_stream(status, content_type, joined(extra));
  }
  void write_chunk(std::string data) override { inner_->write_chunk(std::move(data)); }
  void end_stream() override { inner_->end_stream(); }
  void send_file(int status, const std::string& content_type, int fd, int64_t size, const HeaderList& extra) override {
    inner_->send_file(status, content_type, fd, size, joined(extra));
  }
  void post(std::function<void()> fn) override { inner_->post(std::move(fn)); }
  void watch_disconnect(std::function<void()> on_gone) override { inner_->watch_disconnect(std::move(on_gone)); }
  bool connected() const override { return inner_->connected(); }

 private:
  HeaderList joined(const HeaderList& extra) const {
    HeaderList out = extra;
    out.insert(out.end(), headers_.begin(), headers_.end());
    return out;
  }

  std::shared_ptr<Responder> inner_;
  HeaderList headers_;
};

}  // namespace

std::shared_ptr<Responder> with_headers(std::shared_ptr<Responder> out, HeaderList headers) {
  if (headers.empty()) return out;
  return std::make_shared<HeaderResponder>(std::move(out), std::move(headers));
}

}  // namespace tokenmill::server
