#include "cli/bench_serve_stats.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>
#include <numeric>

namespace tokenmill::cli {

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, values.size() - 1);
  const double fraction = rank - static_cast<double>(below);
  return values[below] + (values[above] - values[below]) * fraction;
}

LatencySummary summarize_ms(const std::vector<double>& seconds) {
  LatencySummary s;
  if (seconds.empty()) return s;
  const double n = static_cast<double>(seconds.size());
  const double mean = std::accumulate(seconds.begin(), seconds.end(), 0.0) / n;
  double variance = 0;
  for (double v : seconds) variance += (v - mean) * (v - mean);
  s.mean_ms = mean * 1e3;
  s.std_ms = std::sqrt(variance / n) * 1e3;  // population std, as numpy's default
  s.median_ms = percentile(seconds, 50) * 1e3;
  s.p99_ms = percentile(seconds, 99) * 1e3;
  return s;
}

BenchReport make_report(const std::vector<RequestResult>& results, const std::vector<int64_t>& estimated_prompt_tokens,
                        double duration_s) {
  assert(estimated_prompt_tokens.size() == results.size());
  assert(duration_s > 0);
  BenchReport r;
  r.duration_s = duration_s;
  std::vector<double> ttft, tpot, itl, e2el;
  std::map<std::string, int64_t> error_counts;
  for (size_t i = 0; i < results.size(); ++i) {
    const RequestResult& result = results[i];
    if (!result.ok) {
      ++r.n_failed;
      ++error_counts[result.error];
      continue;
    }
    ++r.n_completed;
    if (result.n_prompt_tokens >= 0) {
      r.total_input_tokens += result.n_prompt_tokens;
    } else {
      r.total_input_tokens += estimated_prompt_tokens[i];
      r.input_tokens_from_usage = false;
    }
    if (result.n_cached_tokens > 0) r.total_cached_tokens += result.n_cached_tokens;
    r.total_output_tokens += result.n_output_tokens;
    ttft.push_back(result.ttft_s);
    e2el.push_back(result.e2e_s);
    itl.insert(itl.end(), result.itl_s.begin(), result.itl_s.end());
    if (result.n_output_tokens > 1) {
      tpot.push_back((result.e2e_s - result.ttft_s) / static_cast<double>(result.n_output_tokens - 1));
    }
  }
  r.request_throughput = static_cast<double>(r.n_completed) / duration_s;
  r.output_throughput = static_cast<double>(r.total_output_tokens) / duration_s;
  r.total_token_throughput = static_cast<double>(r.total_input_tokens + r.total_output_tokens) / duration_s;
  r.ttft = summarize_ms(ttft);
  r.tpot = summarize_ms(tpot);
  r.itl = summarize_ms(itl);
  r.e2el = summarize_ms(e2el);
  r.errors.assign(error_counts.begin(), error_counts.end());
  std::stable_sort(r.errors.begin(), r.errors.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return r;
}

}  // namespace tokenmill::cli
