// bench-serve's HTTP client: URLs; responses read from scripted bytes in every possible
// split (heads, Content-Length and chunked bodies, malformed framing); HttpConnection
// against a small server on 127.0.0.1; server-sent events.
#include "cli/bench_serve_http.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>

namespace tokenmill::cli {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using std::chrono::milliseconds;

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

// --- Reading a response from scripted bytes -----------------------------------------

const SteadyClock::time_point kT0{};

// Hands out `wire` in pieces of `piece_size` bytes, read i arriving i ms after kT0, then
// the end of the stream.
class ScriptedSource final : public ByteSource {
 public:
  ScriptedSource(std::string wire, size_t piece_size) : wire_(std::move(wire)), piece_size_(piece_size) {}

  Result<Piece> read_some() override {
    const SteadyClock::time_point arrived = kT0 + milliseconds(n_reads_++);
    if (offset_ == wire_.size()) {
      reached_end_ = true;
      return Piece{std::string_view(), arrived};
    }
    std::string_view bytes = std::string_view(wire_).substr(offset_, piece_size_);
    offset_ += bytes.size();
    return Piece{bytes, arrived};
  }

  bool reached_end() const { return reached_end_; }

 private:
  std::string wire_;
  size_t piece_size_;
  size_t offset_ = 0;
  int n_reads_ = 0;
  bool reached_end_ = false;
};

struct Read {
  Status status;
  HttpResponseHead head;
  std::string body;
  std::vector<SteadyClock::time_point> byte_arrived;  // [body.size()]
  bool reached_end = false;  // the reader asked for bytes past the last one
};

Read read_in_pieces(const std::string& wire, size_t piece_size) {
  ScriptedSource source(wire, piece_size);
  Read read;
  Result<HttpResponseHead> head = read_response(source, [&](std::string_view bytes, SteadyClock::time_point arrived) {
    read.body.append(bytes);
    read.byte_arrived.insert(read.byte_arrived.end(), bytes.size(), arrived);
  });
  if (head.ok()) {
    read.head = std::move(*head);
  } else {
    read.status = head.status();
  }
  read.reached_end = source.reached_end();
  return read;
}

// Calls check(read, piece_size) for `wire` read in pieces of every size.
template <class Check>
void for_every_split(const std::string& wire, Check check) {
  for (size_t piece = 1; piece <= std::max<size_t>(wire.size(), 1); ++piece) {
    SCOPED_TRACE("piece " + std::to_string(piece));
    check(read_in_pieces(wire, piece));
  }
}

const std::string kChunkedHead = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

TEST(ReadResponse, StatusAndHeaders) {
  for_every_split("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding:  chunked \r\n\r\n0\r\n\r\n",
                  [](const Read& read) {
                    ASSERT_TRUE(read.status.ok()) << read.status.to_string();
                    EXPECT_EQ(read.head.status, 200);
                    EXPECT_TRUE(read.head.chunked);
                    EXPECT_TRUE(read.head.keep_alive);
                    EXPECT_EQ(read.head.content_length, -1);
                    ASSERT_NE(read.head.header("content-type"), nullptr);
                    EXPECT_EQ(*read.head.header("content-type"), "text/event-stream");
                  });

  const std::string not_found = "HTTP/1.1 404 Not Found\r\nContent-Length: 12\r\nConnection: close\r\n\r\nno such page";
  for_every_split(not_found, [](const Read& read) {
    ASSERT_TRUE(read.status.ok()) << read.status.to_string();
    EXPECT_EQ(read.head.status, 404);
    EXPECT_EQ(read.head.content_length, 12);
    EXPECT_FALSE(read.head.keep_alive);
    EXPECT_EQ(read.body, "no such page");
  });

  // An empty reason phrase; HTTP/1.0 closes by default (and this body runs to the end).
  for_every_split("HTTP/1.0 200 \r\n\r\n", [](const Read& read) {
    ASSERT_TRUE(read.status.ok()) << read.status.to_string();
    EXPECT_EQ(read.head.status, 200);
    EXPECT_FALSE(read.head.keep_alive);
  });
  for_every_split("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", [](const Read& read) {
    ASSERT_TRUE(read.status.ok()) << read.status.to_string();
    EXPECT_TRUE(read.head.keep_alive);
  });
}

TEST(ReadResponse, RejectsGarbage) {
  for (const char* bad : {"HTTP/2 200 OK", "HTTP/1.1 20 OK", "HTTP/1.1 2000 OK", "SSH-2.0-OpenSSH",
                          "HTTP/1.1 200 OK\r\nno colon here", "HTTP/1.1 200\r\n"}) {
    SCOPED_TRACE(bad);
    for_every_split(std::string(bad) + "\r\n\r\n", [](const Read& read) {
      EXPECT_EQ(read.status.code(), ErrorCode::kCorruptData) << read.status.to_string();
      EXPECT_NE(read.status.message().find("malformed HTTP response"), std::string::npos) << read.status.message();
    });
  }
  // Blank lines are no status line (the parser waits for one, then sees the end).
  for_every_split("\r\n\r\n", [](const Read& read) { EXPECT_FALSE(read.status.ok()); });
}

TEST(ReadResponse, ConnectionClosedBeforeTheHeadEnds) {
  Read read = read_in_pieces("", 1);
  EXPECT_EQ(read.status.message(), "the server closed the connection without answering");
  for_every_split("HTTP/1.1 200 OK\r\nContent-Le", [](const Read& read) {
    EXPECT_EQ(read.status.message(), "the server closed the connection in the middle of the response head");
  });
}

TEST(ReadResponse, DechunksAnySplit) {
  const std::string wire = kChunkedHead + "5\r\nhello\r\n7;ext=1\r\n, world\r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n";
  for_every_split(wire, [](const Read& read) {
    EXPECT_TRUE(read.status.ok()) << read.status.to_string();
    EXPECT_EQ(read.body, "hello, world0123456789");
    EXPECT_FALSE(read.reached_end);  // the last chunk ends the response, not the connection
  });
}

TEST(ReadResponse, StopsAtTheLastChunk) {
  for_every_split(kChunkedHead + "2\r\nab\r\n0\r\n\r\nHTTP/1.1 200 OK", [](const Read& read) {
    EXPECT_TRUE(read.status.ok()) << read.status.to_string();
    EXPECT_EQ(read.body, "ab");
    EXPECT_FALSE(read.reached_end);
  });
  // The connection closing before the last chunk is a truncated body.
  for_every_split(kChunkedHead + "2\r\nab\r\n", [](const Read& read) {
    EXPECT_EQ(read.body, "ab");
    EXPECT_EQ(read.status.message(), "the server closed the connection in the middle of a chunked body");
  });
}

TEST(ReadResponse, RejectsMalformedChunkedFraming) {
  for (const char* bad : {"zz\r\n", "\r\n", "2\r\nabc\r\n", "2\rX", "1000000000000000\r\n", "2\r\nab\rX"}) {
    SCOPED_TRACE(bad);
    for_every_split(kChunkedHead + bad, [](const Read& read) { EXPECT_FALSE(read.status.ok()); });
    // The parser may wait for the next line before it judges the last one; with more
    // bytes behind it, the framing error is named as such.
    for_every_split(kChunkedHead + bad + "0\r\n\r\n", [](const Read& read) {
      EXPECT_EQ(read.status.code(), ErrorCode::kCorruptData) << read.status.to_string();
    });
  }
}

TEST(ReadResponse, ContentLengthBodyAnySplit) {
  for_every_split("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello worldHTTP/1.1", [](const Read& read) {
    EXPECT_TRUE(read.status.ok()) << read.status.to_string();
    EXPECT_EQ(read.head.content_length, 11);
    EXPECT_TRUE(read.head.keep_alive);
    EXPECT_EQ(read.body, "hello world");
    EXPECT_FALSE(read.reached_end);
  });
  for_every_split("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello", [](const Read& read) {
    EXPECT_EQ(read.body, "hello");
    EXPECT_EQ(read.status.message(), "the server closed the connection before the end of a Content-Length body");
  });
  for_every_split("HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", [](const Read& read) {
    EXPECT_EQ(read.status.code(), ErrorCode::kCorruptData) << read.status.to_string();
  });
}

TEST(ReadResponse, BodyWithoutLengthRunsToTheEnd) {
  for_every_split("HTTP/1.1 200 OK\r\n\r\nall of it", [](const Read& read) {
    EXPECT_TRUE(read.status.ok()) << read.status.to_string();
    EXPECT_EQ(read.body, "all of it");
    EXPECT_TRUE(read.reached_end);
    EXPECT_FALSE(read.head.keep_alive);  // nothing can follow it on the connection
  });
}

TEST(ReadResponse, SkipsInterimResponsesAndEmptyBodies) {
  for_every_split("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", [](const Read& read) {
    EXPECT_TRUE(read.status.ok()) << read.status.to_string();
    EXPECT_EQ(read.head.status, 200);
    EXPECT_EQ(read.body, "ok");
  });
  for_every_split("HTTP/1.1 204 No Content\r\n\r\n", [](const Read& read) {
    EXPECT_TRUE(read.status.ok()) << read.status.to_string();
    EXPECT_EQ(read.head.status, 204);
    EXPECT_TRUE(read.body.empty());
    EXPECT_FALSE(read.reached_end);
  });
}

// Read i arrives at i ms: byte by byte, each body byte carries the time of the read that
// brought it (or, for a chunk's framing, completed it), not the time the body ended.
TEST(ReadResponse, BodyBytesCarryTheirArrivalTime) {
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n";
  Read read = read_in_pieces(head + "abc", 1);
  ASSERT_EQ(read.body, "abc");
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(read.byte_arrived[i], kT0 + milliseconds(head.size() + i)) << i;

  read = read_in_pieces(kChunkedHead + "2\r\nab\r\n1\r\nc\r\n0\r\n\r\n", 1);
  ASSERT_EQ(read.body, "abc");
  const size_t a = kChunkedHead.size() + 3;  // after "2\r\n"
  EXPECT_EQ(read.byte_arrived[0], kT0 + milliseconds(a));
  EXPECT_EQ(read.byte_arrived[1], kT0 + milliseconds(a + 1));
  EXPECT_EQ(read.byte_arrived[2], kT0 + milliseconds(a + 2 + 2 + 3));  // after "\r\n1\r\n"
}

// --- HttpConnection against a server on 127.0.0.1 ----------------------------------

// Accepts connections on a loopback port one at a time on its own thread and hands each
// to `serve`. Stops after `max_connections`, or when destroyed (it then wakes a pending
// accept with a connection of its own).
class LoopbackServer {
 public:
  LoopbackServer(int max_connections, std::function<void(int index, tcp::socket&)> serve)
      : acceptor_(io_, tcp::endpoint(net::ip::address_v4::loopback(), 0)), serve_(std::move(serve)) {
    thread_ = std::thread([this, max_connections] {
      for (int i = 0; i < max_connections; ++i) {
        tcp::socket socket(io_);
        boost::system::error_code ec;
        acceptor_.accept(socket, ec);
        if (ec || stopping_) return;
        ++n_accepted_;
        serve_(i, socket);
      }
    });
  }
  ~LoopbackServer() {
    stopping_ = true;
    boost::system::error_code ec;
    tcp::socket wake(io_);
    wake.connect(acceptor_.local_endpoint(), ec);
    thread_.join();
  }

  HttpUrl url() const { return HttpUrl{"127.0.0.1", acceptor_.local_endpoint().port(), "/base"}; }
  int n_accepted() const { return n_accepted_; }

 private:
  net::io_context io_;
  tcp::acceptor acceptor_;
  std::function<void(int, tcp::socket&)> serve_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> n_accepted_{0};
  std::thread thread_;
};

// Reads one request head (the tests send no request bodies); "" once the client closed.
std::string read_request_head(tcp::socket& socket, std::string& buffer) {
  boost::system::error_code ec;
  const size_t n = net::read_until(socket, net::dynamic_buffer(buffer), "\r\n\r\n", ec);
  if (ec) return "";
  std::string head = buffer.substr(0, n);
  buffer.erase(0, n);
  return head;
}

void send(tcp::socket& socket, std::string_view bytes) {
  boost::system::error_code ec;
  net::write(socket, net::buffer(bytes.data(), bytes.size()), ec);
}

// Waits until the client closes the connection.
void drain(tcp::socket& socket) {
  char byte;
  boost::system::error_code ec;
  while (!ec) socket.read_some(net::buffer(&byte, 1), ec);
}

struct Received {
  std::string body;
  std::vector<std::pair<std::string, SteadyClock::time_point>> pieces;
};

Result<HttpConnection::Exchange> get(HttpConnection& connection, Received& received) {
  return connection.request("GET", "/v1/models", {{"Accept", "application/json"}}, "",
                            [&](std::string_view bytes, SteadyClock::time_point arrived) {
                              received.body.append(bytes);
                              received.pieces.emplace_back(std::string(bytes), arrived);
                            });
}

TEST(HttpConnection, KeepsTheConnectionAlive) {
  std::mutex mutex;
  std::vector<std::string> heads;
  LoopbackServer server(1, [&](int, tcp::socket& socket) {
    std::string buffer;
    for (const char* response : {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst",
                                 "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nsecond\r\n0\r\n\r\n"}) {
      std::string head = read_request_head(socket, buffer);
      {
        std::lock_guard<std::mutex> lock(mutex);
        heads.push_back(head);
      }
      send(socket, response);
    }
    drain(socket);
  });
  HttpConnection connection(server.url(), milliseconds(5000));
  for (const char* expected : {"first", "second"}) {
    Received received;
    auto exchange = get(connection, received);
    ASSERT_TRUE(exchange.ok()) << exchange.status().to_string();
    EXPECT_EQ(exchange->head.status, 200);
    EXPECT_EQ(received.body, expected);
  }
  EXPECT_EQ(server.n_accepted(), 1);
  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_EQ(heads.size(), 2u);
  EXPECT_EQ(heads[0].substr(0, heads[0].find("\r\n")), "GET /base/v1/models HTTP/1.1");
  EXPECT_NE(heads[0].find("Host: 127.0.0.1:" + std::to_string(server.url().port) + "\r\n"), std::string::npos) << heads[0];
  EXPECT_NE(heads[0].find("Accept: application/json\r\n"), std::string::npos) << heads[0];
}

TEST(HttpConnection, RetriesOnceWhenTheServerClosedAnIdleConnection) {
  LoopbackServer server(2, [](int, tcp::socket& socket) {
    std::string buffer;
    read_request_head(socket, buffer);
    send(socket, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    // Closes while the client holds the connection open for its next request.
  });
  HttpConnection connection(server.url(), milliseconds(5000));
  for (int i = 0; i < 2; ++i) {
    Received received;
    auto exchange = get(connection, received);
    ASSERT_TRUE(exchange.ok()) << i << ": " << exchange.status().to_string();
    EXPECT_EQ(received.body, "ok");
  }
  EXPECT_EQ(server.n_accepted(), 2);
}

TEST(HttpConnection, AFreshConnectionClosedWithoutAnAnswerIsAnError) {
  LoopbackServer server(2, [](int, tcp::socket& socket) {
    std::string buffer;
    read_request_head(socket, buffer);
  });
  HttpConnection connection(server.url(), milliseconds(5000));
  Received received;
  auto exchange = get(connection, received);
  ASSERT_FALSE(exchange.ok());
  EXPECT_EQ(exchange.status().message(), "the server closed the connection without answering");
  EXPECT_EQ(server.n_accepted(), 1);  // not retried
}

TEST(HttpConnection, ConnectReportsARefusedConnection) {
  uint16_t port = 0;
  {
    net::io_context io;
    tcp::acceptor acceptor(io, tcp::endpoint(net::ip::address_v4::loopback(), 0));
    port = acceptor.local_endpoint().port();
  }  // closed: nothing listens there now
  HttpConnection connection(HttpUrl{"127.0.0.1", port, ""}, milliseconds(5000));
  Status status = connection.connect();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), ErrorCode::kIoError);
  EXPECT_EQ(status.message().rfind("cannot connect to 127.0.0.1:" + std::to_string(port) + ": ", 0), 0u) << status.message();
}

TEST(HttpConnection, TimesOutWhenTheServerDoesNotAnswer) {
  LoopbackServer server(1, [](int, tcp::socket& socket) {
    std::string buffer;
    read_request_head(socket, buffer);
    drain(socket);  // never answers; the client gives up and closes
  });
  HttpConnection connection(server.url(), milliseconds(200));
  const SteadyClock::time_point start = SteadyClock::now();
  Received received;
  auto exchange = get(connection, received);
  ASSERT_FALSE(exchange.ok());
  EXPECT_EQ(exchange.status().message(), "no answer from the server for 200 ms");
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(5));
}

TEST(HttpConnection, HandsOnBodyBytesAsTheyArrive) {
  LoopbackServer server(1, [](int, tcp::socket& socket) {
    std::string buffer;
    read_request_head(socket, buffer);
    send(socket, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n");
    std::this_thread::sleep_for(milliseconds(200));
    send(socket, "6\r\nsecond\r\n0\r\n\r\n");
    drain(socket);
  });
  HttpConnection connection(server.url(), milliseconds(5000));
  Received received;
  auto exchange = get(connection, received);
  ASSERT_TRUE(exchange.ok()) << exchange.status().to_string();
  ASSERT_EQ(received.pieces.size(), 2u);
  EXPECT_EQ(received.pieces[0].first, "first");
  EXPECT_EQ(received.pieces[1].first, "second");
  EXPECT_LE(exchange->sent, received.pieces[0].second);
  // The first chunk was handed on when it came, not when the body ended.
  EXPECT_GE(received.pieces[1].second - received.pieces[0].second, milliseconds(100));
}

// --- Server-sent events --------------------------------------------------------------

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
