// The framing pieces of bench-serve's HTTP client: URLs, response heads, chunked bodies
// and server-sent events, each fed in every possible split of its bytes.
#include "cli/bench_serve_http.h"

#include <gtest/gtest.h>

namespace tokenmill::cli {
namespace {

TEST(ParseHttpUrl, HostPortAndBasePath) {
  auto url = parse_http_url("http://127.0.0.1:8080");
  ASSERT_TRUE(url.ok()) << url.status().to_string();
  EXPECT_EQ(url->host, "127.0.0.1");
  EXPECT_EQ(url->port, 8080);
  EXPECT_EQ(url->base_path, "");

  url = parse_http_url("HTTP://localhost/");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->host, "localhost");
  EXPECT_EQ(url->port, 80);
  EXPECT_EQ(url->base_path, "");

  url = parse_http_url("http://[::1]:9000/proxy/v1/");  // a trailing /v1 is the OpenAI clients' habit
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->host, "::1");
  EXPECT_EQ(url->port, 9000);
  EXPECT_EQ(url->base_path, "/proxy");
}

TEST(ParseHttpUrl, RejectsWhatItCannotServe) {
  for (const char* bad : {"127.0.0.1:8080", "ftp://x", "http://", "http://:80", "http://host:", "http://host:0",
                          "http://host:65536", "http://host:80x", "http://[::1", "http://u@host", "http://h/?q=1"}) {
    EXPECT_FALSE(parse_http_url(bad).ok()) << bad;
  }
  auto tls = parse_http_url("https://example.com");
  ASSERT_FALSE(tls.ok());
  EXPECT_NE(tls.status().message().find("https is not supported"), std::string::npos);
}

TEST(ParseResponseHead, StatusAndHeaders) {
  auto head = parse_response_head("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding:  chunked \r\n");
  ASSERT_TRUE(head.ok()) << head.status().to_string();
  EXPECT_EQ(head->status, 200);
  EXPECT_TRUE(head->chunked());
  EXPECT_TRUE(head->keep_alive());
  EXPECT_EQ(head->content_length(), -1);
  ASSERT_NE(head->header("content-type"), nullptr);
  EXPECT_EQ(*head->header("content-type"), "text/event-stream");

  head = parse_response_head("HTTP/1.1 404 Not Found\r\nContent-Length: 12\r\nConnection: close");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->status, 404);
  EXPECT_EQ(head->content_length(), 12);
  EXPECT_FALSE(head->keep_alive());

  head = parse_response_head("HTTP/1.0 200");  // no reason phrase; 1.0 closes by default
  ASSERT_TRUE(head.ok());
  EXPECT_FALSE(head->keep_alive());
  head = parse_response_head("HTTP/1.0 200 OK\r\nConnection: Keep-Alive");
  ASSERT_TRUE(head.ok());
  EXPECT_TRUE(head->keep_alive());
}

TEST(ParseResponseHead, RejectsGarbage) {
  for (const char* bad : {"", "HTTP/2 200 OK", "HTTP/1.1 20 OK", "HTTP/1.1 2000 OK", "SSH-2.0-OpenSSH",
                          "HTTP/1.1 200 OK\r\nno colon here"}) {
    EXPECT_FALSE(parse_response_head(bad).ok()) << bad;
  }
}

// Feeds `wire` to a fresh decoder in pieces of `piece` bytes.
std::string decode_in_pieces(const std::string& wire, size_t piece, bool* done, Status* status) {
  ChunkedDecoder decoder;
  std::string out;
  *status = Status();
  for (size_t i = 0; i < wire.size() && status->ok(); i += piece) *status = decoder.feed(std::string_view(wire).substr(i, piece), out);
  *done = decoder.done();
  return out;
}

TEST(ChunkedDecoder, DecodesAnySplit) {
  const std::string wire = "5\r\nhello\r\n7;ext=1\r\n, world\r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n";
  for (size_t piece = 1; piece <= wire.size(); ++piece) {
    bool done = false;
    Status status;
    EXPECT_EQ(decode_in_pieces(wire, piece, &done, &status), "hello, world0123456789") << "piece " << piece;
    EXPECT_TRUE(status.ok()) << status.to_string();
    EXPECT_TRUE(done) << "piece " << piece;
  }
}

TEST(ChunkedDecoder, StopsAtTheLastChunk) {
  bool done = false;
  Status status;
  EXPECT_EQ(decode_in_pieces("2\r\nab\r\n0\r\n\r\nHTTP/1.1 200 OK", 100, &done, &status), "ab");
  EXPECT_TRUE(done);
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(decode_in_pieces("2\r\nab\r\n", 100, &done, &status), "ab");
  EXPECT_FALSE(done);  // the connection closing here would be a truncated body
}

TEST(ChunkedDecoder, RejectsMalformedFraming) {
  for (const char* bad : {"zz\r\n", "\r\n", "2\r\nabc\r\n", "2\rX", "1000000000000000\r\n", "2\r\nab\rX"}) {
    bool done = false;
    Status status;
    decode_in_pieces(bad, 100, &done, &status);
    EXPECT_FALSE(status.ok()) << bad;
  }
}

TEST(SseParser, EventsFromAnySplit) {
  const std::string body =
      "data: {\"a\":1}\n\n"
      ": a comment\r\n"
      "event: message\r\n"
      "data: {\"b\":\r\n"
      "data:2}\r\n\r\n"
      "id: 7\n\n"           // no data: no event
      "data: [DONE]\r\r";   // CR line ends
  for (size_t piece = 1; piece <= body.size(); ++piece) {
    SseParser parser;
    std::vector<std::string> events;
    for (size_t i = 0; i < body.size(); i += piece) {
      for (std::string& e : parser.feed(std::string_view(body).substr(i, piece))) events.push_back(std::move(e));
    }
    ASSERT_EQ(events.size(), 3u) << "piece " << piece;
    EXPECT_EQ(events[0], "{\"a\":1}");
    EXPECT_EQ(events[1], "{\"b\":\n2}");
    EXPECT_EQ(events[2], "[DONE]");
  }
}

TEST(SseParser, IncompleteEventIsHeldBack) {
  SseParser parser;
  EXPECT_TRUE(parser.feed("data: partial\n").empty());
  auto events = parser.feed("\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], "partial");
}

}  // namespace
}  // namespace tokenmill::cli
