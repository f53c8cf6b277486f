// Percentiles, the per-request stream recorder and the run summary of bench-serve,
// on hand-made timelines whose numbers can be checked by hand.
#include "cli/bench_serve_stats.h"

#include <cmath>

#include <gtest/gtest.h>

#include "cli/bench_serve_stream.h"

namespace tokenmill::cli {
namespace {

TEST(Percentile, InterpolatesLikeNumpy) {
  EXPECT_EQ(percentile({}, 50), 0);
  EXPECT_EQ(percentile({7}, 99), 7);
  EXPECT_DOUBLE_EQ(percentile({2, 1}, 50), 1.5);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 0), 1);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 100), 4);
  // numpy.percentile(range(1, 101), 99) == 99.01
  std::vector<double> hundred;
  for (int i = 1; i <= 100; ++i) hundred.push_back(i);
  EXPECT_NEAR(percentile(hundred, 99), 99.01, 1e-9);
  EXPECT_NEAR(percentile(hundred, 50), 50.5, 1e-9);
}

TEST(SummarizeMs, MeanMedianStdP99) {
  LatencySummary s = summarize_ms({0.001, 0.002, 0.003, 0.010});
  EXPECT_NEAR(s.mean_ms, 4.0, 1e-9);
  EXPECT_NEAR(s.median_ms, 2.5, 1e-9);
  EXPECT_NEAR(s.std_ms, std::sqrt((9 + 4 + 1 + 36) / 4.0), 1e-9);
  EXPECT_NEAR(s.p99_ms, 3 + 7 * 0.97, 1e-9);
  EXPECT_LE(s.median_ms, s.p99_ms);
}

using std::chrono::milliseconds;

constexpr const char* kUsage =
    R"({"choices":[],"usage":{"prompt_tokens":32,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":16}}})";

TEST(StreamRecorder, CompletionsTimeline) {
  const SteadyClock::time_point sent{};
  StreamRecorder recorder(Endpoint::kCompletions, sent);
  recorder.on_event(R"({"choices":[{"index":0,"text":""}],"usage":null})", sent + milliseconds(10));  // empty: not a token
  recorder.on_event(R"({"choices":[{"index":0,"text":"Hello"}],"usage":null})", sent + milliseconds(100));
  recorder.on_event(R"({"choices":[{"index":0,"text":" big"}],"usage":null})", sent + milliseconds(130));
  recorder.on_event(R"({"choices":[{"index":0,"text":" world!"}],"usage":null})", sent + milliseconds(190));
  recorder.on_event(R"({"choices":[{"index":0,"text":"","finish_reason":"length"}]})", sent + milliseconds(190));
  recorder.on_event(kUsage, sent + milliseconds(191));
  recorder.on_event("[DONE]", sent + milliseconds(191));
  RequestResult r = recorder.finish(sent + milliseconds(200));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NEAR(r.ttft_s, 0.100, 1e-9);
  EXPECT_NEAR(r.e2e_s, 0.200, 1e-9);
  ASSERT_EQ(r.itl_s.size(), 2u);
  EXPECT_NEAR(r.itl_s[0], 0.030, 1e-9);
  EXPECT_NEAR(r.itl_s[1], 0.060, 1e-9);
  EXPECT_EQ(r.n_content_chunks, 3);
  EXPECT_EQ(r.n_output_tokens, 4);  // usage wins over the chunk count
  EXPECT_EQ(r.n_prompt_tokens, 32);
  EXPECT_EQ(r.n_cached_tokens, 16);
}

TEST(StreamRecorder, ChatDeltasWithoutUsageCountChunks) {
  const SteadyClock::time_point sent{};
  StreamRecorder recorder(Endpoint::kChat, sent);
  recorder.on_event(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})", sent + milliseconds(5));
  recorder.on_event(R"({"choices":[{"index":0,"delta":{"content":"Hi"}}]})", sent + milliseconds(50));
  recorder.on_event(R"({"choices":[{"index":0,"delta":{"content":" there"}}]})", sent + milliseconds(70));
  recorder.on_event(R"({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})", sent + milliseconds(70));
  recorder.on_event("[DONE]", sent + milliseconds(71));
  recorder.on_event("garbage after the end is ignored", sent + milliseconds(72));
  RequestResult r = recorder.finish(sent + milliseconds(80));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NEAR(r.ttft_s, 0.050, 1e-9);
  EXPECT_EQ(r.n_output_tokens, 2);
  EXPECT_EQ(r.n_prompt_tokens, -1);
  EXPECT_EQ(r.n_cached_tokens, -1);
}

RequestResult record(std::initializer_list<const char*> events, Endpoint endpoint = Endpoint::kCompletions) {
  StreamRecorder recorder(endpoint, SteadyClock::time_point{});
  for (const char* e : events) recorder.on_event(e, SteadyClock::time_point{} + milliseconds(1));
  return recorder.finish(SteadyClock::time_point{} + milliseconds(2));
}

TEST(StreamRecorder, Failures) {
  RequestResult r = record({R"({"choices":[{"text":"a"}]})"});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("[DONE]"), std::string::npos) << r.error;

  r = record({"{not json", "[DONE]"});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("malformed SSE event"), std::string::npos) << r.error;

  r = record({R"({"error":{"message":"out of memory","type":"server_error"}})", "[DONE]"});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "error event: out of memory");

  r = record({R"({"choices":[{"text":""}]})", "[DONE]"});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "the stream carried no content");

  StreamRecorder recorder(Endpoint::kChat, SteadyClock::time_point{});
  recorder.fail("HTTP 401: bad key");
  recorder.on_event("[DONE]", SteadyClock::time_point{});
  r = recorder.finish(SteadyClock::time_point{});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "HTTP 401: bad key");
}

TEST(ErrorBodyMessage, OpenAiShapeOrRawText) {
  EXPECT_EQ(error_body_message(R"({"error":{"message":"The model 'x' does not exist","code":404}})"),
            "The model 'x' does not exist");
  EXPECT_EQ(error_body_message("Not Found\nmore"), "Not Found");
}

TEST(MakeReport, ThroughputAndLatencies) {
  RequestResult a;
  a.ok = true;
  a.ttft_s = 0.1;
  a.e2e_s = 0.4;
  a.itl_s = {0.1, 0.2};
  a.n_output_tokens = 4;  // TPOT (0.4 - 0.1) / 3 = 0.1
  a.n_prompt_tokens = 30;
  a.n_cached_tokens = 16;
  RequestResult b = a;
  b.ttft_s = 0.3;
  b.e2e_s = 0.5;
  b.itl_s = {0.3};
  b.n_output_tokens = 1;  // no TPOT with one token
  b.n_prompt_tokens = -1;
  b.n_cached_tokens = -1;
  RequestResult c;
  c.error = "HTTP 500: boom";
  RequestResult d = c;

  BenchReport r = make_report({a, b, c, d}, {32, 32, 32, 32}, 2.0);
  EXPECT_EQ(r.n_completed, 2);
  EXPECT_EQ(r.n_failed, 2);
  EXPECT_EQ(r.total_input_tokens, 30 + 32);
  EXPECT_FALSE(r.input_tokens_from_usage);
  EXPECT_EQ(r.total_output_tokens, 5);
  EXPECT_EQ(r.total_cached_tokens, 16);
  EXPECT_DOUBLE_EQ(r.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(r.output_throughput, 2.5);
  EXPECT_DOUBLE_EQ(r.total_token_throughput, (62 + 5) / 2.0);
  EXPECT_NEAR(r.ttft.mean_ms, 200, 1e-9);
  EXPECT_NEAR(r.tpot.mean_ms, 100, 1e-9);
  EXPECT_NEAR(r.itl.median_ms, 200, 1e-9);
  EXPECT_NEAR(r.e2el.p99_ms, 400 + 100 * 0.99, 1e-9);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].first, "HTTP 500: boom");
  EXPECT_EQ(r.errors[0].second, 2);
}

}  // namespace
}  // namespace tokenmill::cli
