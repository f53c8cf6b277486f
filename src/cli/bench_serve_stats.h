// What `tokenmill bench-serve` measures per request, and the summary over a run:
// throughput and mean / median / p99 latencies, named as vLLM's serving benchmark
// names them so that numbers from both read alike.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tokenmill::cli {

// One streamed request, as the client saw it. Times in seconds from the moment the
// request was sent.
struct RequestResult {
  bool ok = false;
  std::string error;            // why not ok
  double ttft_s = 0;            // to the first chunk with non-empty content
  double e2e_s = 0;             // to the end of the response
  std::vector<double> itl_s;    // between consecutive content chunks
  int64_t n_output_tokens = 0;  // usage.completion_tokens, else the content chunks
  int64_t n_prompt_tokens = -1; // usage.prompt_tokens; -1 when the server sent none
  int64_t n_cached_tokens = -1; // usage.prompt_tokens_details.cached_tokens; -1 if absent
  int64_t n_content_chunks = 0;
};

// p in [0, 100]; linear interpolation between the closest ranks (numpy's default), so
// that p50 of {1, 2} is 1.5. An empty sample gives 0.
double percentile(std::vector<double> values, double p);

struct LatencySummary {
  double mean_ms = 0, median_ms = 0, std_ms = 0, p99_ms = 0;
};

LatencySummary summarize_ms(const std::vector<double>& seconds);

struct BenchReport {
  double duration_s = 0;
  int64_t n_completed = 0;
  int64_t n_failed = 0;
  int64_t total_input_tokens = 0;   // usage.prompt_tokens summed (estimates where absent)
  int64_t total_output_tokens = 0;
  int64_t total_cached_tokens = 0;  // usage.prompt_tokens_details.cached_tokens summed
  bool input_tokens_from_usage = true;  // false if some request fell back to the estimate
  double request_throughput = 0;    // completed requests / s
  double output_throughput = 0;     // output tokens / s, all streams together
  double total_token_throughput = 0;  // (input + output) tokens / s
  LatencySummary ttft, tpot, itl, e2el;
  // Distinct failure messages with their counts, most frequent first.
  std::vector<std::pair<std::string, int64_t>> errors;
};

// `estimated_prompt_tokens[i]` stands in for results[i].n_prompt_tokens when the server
// did not report it. Only successful requests count toward tokens and latencies; TPOT
// is (e2e - ttft) / (output tokens - 1) over requests with more than one output token.
// REQUIRES: estimated_prompt_tokens.size() == results.size(), duration_s > 0.
BenchReport make_report(const std::vector<RequestResult>& results, const std::vector<int64_t>& estimated_prompt_tokens,
                        double duration_s);

}  // namespace tokenmill::cli
