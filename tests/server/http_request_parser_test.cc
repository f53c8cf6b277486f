// The request reader's upload spooling: a file upload's body goes to a file in the spool
// directory (never into HttpRequest::body), the file lives as long as the request, and an
// upload that is refused or cut short leaves nothing behind.
#include "server/http_request_parser.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>

#include <gtest/gtest.h>

namespace tokenmill::server {
namespace {

namespace fs = std::filesystem;

class UploadSpool : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = (fs::temp_directory_path() / "tokenmill-spool-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(dir.data()), nullptr);
    dir_ = dir;
    limits_.max_body_bytes = 64;
    limits_.max_upload_bytes = 4096;
    limits_.upload_spool_dir = dir_;
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string request(const std::string& target, const std::string& body) {
    return "POST " + target + " HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n" +
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  }
  static std::string read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }

  std::string dir_;
  HttpLimits limits_;
};

TEST_F(UploadSpool, AnUploadsBodyIsInItsFileUntilTheRequestGoes) {
  const std::string body(3000, 'x');  // larger than max_body_bytes, within the upload limit
  auto parsed = parse_http_request(request("/v1/files", body), limits_);
  ASSERT_TRUE(parsed.has_value());
  ASSERT_TRUE(std::holds_alternative<HttpRequest>(*parsed));
  const HttpRequest& upload = std::get<HttpRequest>(*parsed);
  EXPECT_TRUE(upload.body.empty());
  ASSERT_NE(upload.body_file, nullptr);
  EXPECT_EQ(upload.body_file->size(), body.size());
  EXPECT_EQ(read(upload.body_file->path()), body);
  EXPECT_EQ(fs::path(upload.body_file->path()).parent_path(), fs::path(dir_));
  parsed.reset();
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(UploadSpool, OtherRoutesKeepTheirBodyInMemory) {
  auto parsed = parse_http_request(request("/v1/chat/completions", "{}"), limits_);
  ASSERT_TRUE(parsed.has_value() && std::holds_alternative<HttpRequest>(*parsed));
  EXPECT_EQ(std::get<HttpRequest>(*parsed).body, "{}");
  EXPECT_EQ(std::get<HttpRequest>(*parsed).body_file, nullptr);
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(UploadSpool, RefusedOrCutShortUploadsLeaveNoFile) {
  // Announced past the limit: refused at the header.
  auto too_large = parse_http_request(request("/v1/files", std::string(5000, 'x')), limits_);
  ASSERT_TRUE(too_large.has_value() && std::holds_alternative<HttpRejection>(*too_large));
  EXPECT_EQ(std::get<HttpRejection>(*too_large).status, 413);
  // Chunked past the limit: refused while it arrives, after the spool file was begun.
  std::string chunked = "POST /v1/files HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 3; ++i) chunked += "800\r\n" + std::string(0x800, 'y') + "\r\n";
  chunked += "0\r\n\r\n";
  auto chunked_too_large = parse_http_request(chunked, limits_);
  ASSERT_TRUE(chunked_too_large.has_value() && std::holds_alternative<HttpRejection>(*chunked_too_large));
  EXPECT_EQ(std::get<HttpRejection>(*chunked_too_large).status, 413);
  // The connection ends half-way through the body.
  std::string cut = request("/v1/files", std::string(3000, 'z'));
  cut.resize(cut.size() - 1000);
  EXPECT_FALSE(parse_http_request(cut, limits_).has_value());
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(UploadSpool, AnUnwritableSpoolDirectoryIsAnErrorNotACrash) {
  limits_.upload_spool_dir = dir_ + "/missing";
  auto parsed = parse_http_request(request("/v1/files", "abc"), limits_);
  ASSERT_TRUE(parsed.has_value() && std::holds_alternative<HttpRejection>(*parsed));
  EXPECT_EQ(std::get<HttpRejection>(*parsed).status, 500);
}

}  // namespace
}  // namespace tokenmill::server
