#include "server/cors.h"

#include <utility>

namespace tokenmill::server {

namespace {

// Forwards everything to the connection's Responder, adding the headers to the answer.
class CorsResponder : public Responder {
 public:
  CorsResponder(std::shared_ptr<Responder> inner, std::string origin) : inner_(std::move(inner)), origin_(std::move(origin)) {}

  void send(int status, const std::string& content_type, std::string body, const HeaderList& extra) override {
    inner_->send(status, content_type, std::move(body), with_headers(extra));
  }
  void begin_stream(int status, const std::string& content_type, const HeaderList& extra) override {
    inner_->begin_stream(status, content_type, with_headers(extra));
  }
  void write_chunk(std::string data) override { inner_->write_chunk(std::move(data)); }
  void end_stream() override { inner_->end_stream(); }
  void post(std::function<void()> fn) override { inner_->post(std::move(fn)); }
  void watch_disconnect(std::function<void()> on_gone) override { inner_->watch_disconnect(std::move(on_gone)); }
  bool connected() const override { return inner_->connected(); }

 private:
  HeaderList with_headers(const HeaderList& extra) const {
    HeaderList out = extra;
    out.emplace_back("Access-Control-Allow-Origin", origin_);
    if (origin_ != "*") out.emplace_back("Vary", "Origin");
    return out;
  }

  std::shared_ptr<Responder> inner_;
  std::string origin_;
};

}  // namespace

std::string allowed_origin(const HttpRequest& request, const std::string& cors_origin) {
  const std::string& origin = request.header("origin");
  if (cors_origin.empty() || origin.empty()) return "";
  if (cors_origin == "*") return "*";
  return origin == cors_origin ? origin : "";
}

bool answer_preflight(const HttpRequest& request, const std::string& origin, Responder& out) {
  if (origin.empty() || request.method != "OPTIONS" || request.header("access-control-request-method").empty()) {
    return false;
  }
  HeaderList headers = {{"Access-Control-Allow-Origin", origin},
                        {"Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS"},
                        {"Access-Control-Allow-Headers", "Authorization, Content-Type"},
                        {"Access-Control-Max-Age", "600"}};
  if (origin != "*") headers.emplace_back("Vary", "Origin");
  out.send(204, "text/plain", "", headers);
  return true;
}

std::shared_ptr<Responder> with_cors_headers(std::shared_ptr<Responder> out, std::string origin) {
  return std::make_shared<CorsResponder>(std::move(out), std::move(origin));
}

}  // namespace tokenmill::server
