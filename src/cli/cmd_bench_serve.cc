// tokenmill bench-serve: a load generator for any OpenAI-compatible streaming server,
// like vLLM's serving benchmark. CONCURRENCY client threads share REQUESTS streamed
// completions; each client keeps one HTTP/1.1 connection alive and sends its next request
// as soon as the previous one ends (a closed loop: CONCURRENCY requests in flight).
//
// Prompts are random common words (seeded, so runs repeat), about one token each; with
// --shared-prefix the first LEN words are the same in every prompt, to measure prefix
// caching. Each request asks for exactly --gen-len tokens (temperature 0, ignore_eos).
//
// Reported: request and token throughput, and mean / median / p99 of time to first token
// (TTFT), time per output token after the first (TPOT), inter-token latency between
// content chunks (ITL) and end-to-end latency (E2EL). Exit code 1 if any request failed.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/bench_serve_http.h"
#include "cli/bench_serve_stats.h"
#include "cli/bench_serve_stream.h"
#include "cli/commands.h"

namespace tokenmill::cli {

namespace {

using Json = nlohmann::json;
using Headers = std::vector<std::pair<std::string, std::string>>;

struct BenchServeOptions {
  std::string url = "http://127.0.0.1:8080";
  int concurrency = 1;
  int64_t n_requests = 16;
  int32_t prompt_len = 256;
  int32_t gen_len = 128;
  int32_t shared_prefix = 0;
  std::string model;  // empty: the first of GET /v1/models, else none
  std::string api_key;
  uint32_t seed = 0;
  std::string endpoint = "completions";
  double timeout_s = 600;
  bool json = false;
};

// Words that most tokenizers keep whole (with their leading space), so that a prompt of
// N words is about N tokens.
constexpr const char* kWords[] = {
    "the",    "of",     "and",    "to",      "in",     "is",     "you",    "that",   "it",     "he",
    "was",    "for",    "on",     "are",     "as",     "with",   "his",    "they",   "at",     "be",
    "this",   "have",   "from",   "or",      "one",    "had",    "by",     "word",   "but",    "not",
    "what",   "all",    "were",   "we",      "when",   "your",   "can",    "said",   "there",  "use",
    "an",     "each",   "which",  "she",     "do",     "how",    "their",  "if",     "will",   "up",
    "other",  "about",  "out",    "many",    "then",   "them",   "these",  "so",     "some",   "her",
    "would",  "make",   "like",   "him",     "into",   "time",   "has",    "look",   "two",    "more",
    "write",  "go",     "see",    "number",  "no",     "way",    "could",  "people", "my",     "than",
    "first",  "water",  "been",   "call",    "who",    "oil",    "its",    "now",    "find",   "long",
    "down",   "day",    "did",    "get",     "come",   "made",   "may",    "part",   "over",   "new",
    "sound",  "take",   "only",   "little",  "work",   "know",   "place",  "year",   "live",   "me",
    "back",   "give",   "most",   "very",    "after",  "thing",  "our",    "just",   "name",   "good",
    "man",    "think",  "say",    "great",   "where",  "help",   "through", "much",  "before", "line",
    "right",  "too",    "mean",   "old",     "any",    "same",   "tell",   "boy",    "follow", "came",
    "want",   "show",   "also",   "around",  "form",   "three",  "small",  "set",    "put",    "end",
    "does",   "another", "well",  "large",   "must",   "big",    "even",   "such",   "because", "turn",
    "here",   "why",    "ask",    "went",    "men",    "read",   "need",   "land",   "home",   "us",
    "move",   "try",    "kind",   "hand",    "picture", "again", "change", "off",    "play",   "air",
    "away",   "animal", "house",  "point",   "page",   "letter", "mother", "answer", "found",  "study",
    "still",  "learn",  "should", "world",   "city",   "tree",   "cross",  "farm",   "hard",   "start",
};
constexpr size_t kNumWords = sizeof(kWords) / sizeof(kWords[0]);

void append_words(std::string& text, int32_t n_words, std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> pick(0, kNumWords - 1);
  for (int32_t i = 0; i < n_words; ++i) {
    if (!text.empty()) text += ' ';
    text += kWords[pick(rng)];
  }
}

// Prompt i depends only on (seed, i): the same runs send the same prompts whatever the
// order the clients take them in.
std::vector<std::string> make_prompts(const BenchServeOptions& o) {
  std::mt19937_64 prefix_rng(o.seed);
  std::string prefix;
  append_words(prefix, o.shared_prefix, prefix_rng);
  std::vector<std::string> prompts(static_cast<size_t>(o.n_requests));
  for (int64_t i = 0; i < o.n_requests; ++i) {
    std::seed_seq seq{o.seed, static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), 0x5eedu};
    std::mt19937_64 rng(seq);
    std::string prompt = prefix;
    append_words(prompt, o.prompt_len - o.shared_prefix, rng);
    prompts[static_cast<size_t>(i)] = std::move(prompt);
  }
  return prompts;
}

std::string request_body(const BenchServeOptions& o, Endpoint endpoint, const std::string& model, const std::string& prompt) {
  Json body;
  if (!model.empty()) body["model"] = model;
  if (endpoint == Endpoint::kChat) {
    body["messages"] = Json::array({{{"role", "user"}, {"content", prompt}}});
  } else {
    body["prompt"] = prompt;
  }
  body["max_tokens"] = o.gen_len;
  body["temperature"] = 0;
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  body["ignore_eos"] = true;  // an extension (vLLM, llama.cpp, tokenmill): exactly max_tokens
  return body.dump();
}

Headers request_headers(const BenchServeOptions& o, bool stream) {
  Headers headers = {{"Content-Type", "application/json"}, {"Accept", stream ? "text/event-stream" : "application/json"},
                     {"User-Agent", "tokenmill-bench-serve"}};
  if (!o.api_key.empty()) headers.emplace_back("Authorization", "Bearer " + o.api_key);
  return headers;
}

// GET /v1/models before the clock starts: reports an unreachable server or a rejected
// key in one line, and names the model when --model was not given.
Result<std::string> preflight(const BenchServeOptions& o, const HttpUrl& url) {
  HttpConnection connection(url, std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000)));
  std::string body;
  auto exchange = connection.request("GET", "/v1/models", request_headers(o, false), "",
                                     [&](std::string_view bytes, SteadyClock::time_point) {
                                       if (body.size() < (1 << 20)) body.append(bytes);
                                     });
  if (!exchange.ok()) return exchange.status();
  const int status = exchange->head.status;
  if (status == 401 || status == 403) {
    return invalid_argument("the server refused GET /v1/models with HTTP " + std::to_string(status) + ": " +
                            error_body_message(body) + (o.api_key.empty() ? " (try --api-key)" : ""));
  }
  if (!o.model.empty() || status != 200) return o.model;
  Json models = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (models.is_object() && models.contains("data") && models["data"].is_array() && !models["data"].empty() &&
      models["data"][0].contains("id") && models["data"][0]["id"].is_string()) {
    return models["data"][0]["id"].get<std::string>();
  }
  return std::string();
}

RequestResult run_request(HttpConnection& connection, const BenchServeOptions& o, Endpoint endpoint,
                          const std::string& path, const std::string& body) {
  struct Event {
    std::string data;
    SteadyClock::time_point arrived;
  };
  std::vector<Event> events;
  SseParser sse;
  std::string raw;  // the start of the body, for an error message
  auto exchange = connection.request("POST", path, request_headers(o, true), body,
                                     [&](std::string_view bytes, SteadyClock::time_point arrived) {
                                       if (raw.size() < 4096) raw.append(bytes.substr(0, 4096 - raw.size()));
                                       for (std::string& data : sse.feed(bytes)) events.push_back({std::move(data), arrived});
                                     });
  const SteadyClock::time_point end = SteadyClock::now();
  if (!exchange.ok()) {
    RequestResult failed;
    failed.error = exchange.status().message();
    return failed;
  }
  StreamRecorder recorder(endpoint, exchange->sent);
  if (exchange->head.status != 200) {
    recorder.fail("HTTP " + std::to_string(exchange->head.status) + ": " + error_body_message(raw));
  }
  for (const Event& event : events) recorder.on_event(event.data, event.arrived);
  return recorder.finish(end);
}

void print_summary_rows(const char* title, const char* name, const LatencySummary& s) {
  std::printf("%s\n", title);
  std::printf("%-40s %10.2f\n", ("Mean " + std::string(name) + " (ms):").c_str(), s.mean_ms);
  std::printf("%-40s %10.2f\n", ("Median " + std::string(name) + " (ms):").c_str(), s.median_ms);
  std::printf("%-40s %10.2f\n", ("P99 " + std::string(name) + " (ms):").c_str(), s.p99_ms);
}

void print_text(const BenchServeOptions& o, const std::string& model, const BenchReport& r) {
  std::printf("============ Serving Benchmark Result ============\n");
  std::printf("%-40s %10s\n", "Endpoint:", o.endpoint.c_str());
  if (!model.empty()) std::printf("%-40s %10s\n", "Model:", model.c_str());
  std::printf("%-40s %10d\n", "Concurrency:", o.concurrency);
  std::printf("%-40s %10lld\n", "Successful requests:", static_cast<long long>(r.n_completed));
  std::printf("%-40s %10lld\n", "Failed requests:", static_cast<long long>(r.n_failed));
  std::printf("%-40s %10.2f\n", "Benchmark duration (s):", r.duration_s);
  std::printf("%-40s %10lld%s\n", "Total input tokens:", static_cast<long long>(r.total_input_tokens),
              r.input_tokens_from_usage ? "" : " (estimated: no usage from the server)");
  std::printf("%-40s %10lld\n", "Cached input tokens:", static_cast<long long>(r.total_cached_tokens));
  std::printf("%-40s %10lld\n", "Total generated tokens:", static_cast<long long>(r.total_output_tokens));
  std::printf("%-40s %10.2f\n", "Request throughput (req/s):", r.request_throughput);
  std::printf("%-40s %10.2f\n", "Output token throughput (tok/s):", r.output_throughput);
  std::printf("%-40s %10.2f\n", "Total token throughput (tok/s):", r.total_token_throughput);
  print_summary_rows("---------------Time to First Token----------------", "TTFT", r.ttft);
  print_summary_rows("-----Time per Output Token (excl. 1st token)------", "TPOT", r.tpot);
  print_summary_rows("---------------Inter-token Latency----------------", "ITL", r.itl);
  print_summary_rows("----------------End-to-end Latency----------------", "E2EL", r.e2el);
  std::printf("==================================================\n");
  for (const auto& [message, count] : r.errors) std::printf("failed x%lld: %s\n", static_cast<long long>(count), message.c_str());
}

void add_summary(nlohmann::ordered_json& out, const char* name, const LatencySummary& s) {
  const std::string n(name);
  out["mean_" + n + "_ms"] = s.mean_ms;
  out["median_" + n + "_ms"] = s.median_ms;
  out["std_" + n + "_ms"] = s.std_ms;
  out["p99_" + n + "_ms"] = s.p99_ms;
}

void print_json(const BenchServeOptions& o, const std::string& model, const BenchReport& r) {
  nlohmann::ordered_json out = {{"url", o.url},
              {"endpoint", o.endpoint},
              {"model", model},
              {"concurrency", o.concurrency},
              {"num_requests", o.n_requests},
              {"prompt_len", o.prompt_len},
              {"gen_len", o.gen_len},
              {"shared_prefix", o.shared_prefix},
              {"seed", o.seed},
              {"duration", r.duration_s},
              {"completed", r.n_completed},
              {"failed", r.n_failed},
              {"total_input_tokens", r.total_input_tokens},
              {"total_output_tokens", r.total_output_tokens},
              {"total_cached_tokens", r.total_cached_tokens},
              {"input_tokens_from_usage", r.input_tokens_from_usage},
              {"request_throughput", r.request_throughput},
              {"output_throughput", r.output_throughput},
              {"total_token_throughput", r.total_token_throughput}};
  add_summary(out, "ttft", r.ttft);
  add_summary(out, "tpot", r.tpot);
  add_summary(out, "itl", r.itl);
  add_summary(out, "e2el", r.e2el);
  nlohmann::ordered_json errors = nlohmann::ordered_json::array();
  for (const auto& [message, count] : r.errors) errors.push_back({{"message", message}, {"count", count}});
  out["errors"] = std::move(errors);
  std::printf("%s\n", out.dump(2).c_str());
}

int fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

int bench_serve(BenchServeOptions o) {
  if (o.shared_prefix > o.prompt_len) {
    return fail("--shared-prefix (" + std::to_string(o.shared_prefix) + ") must not exceed --prompt-len (" +
                std::to_string(o.prompt_len) + ")");
  }
  auto url = parse_http_url(o.url);
  if (!url.ok()) return fail(url.status().message());
  const Endpoint endpoint = o.endpoint == "chat" ? Endpoint::kChat : Endpoint::kCompletions;
  const std::string path = endpoint == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions";

  auto model = preflight(o, *url);
  if (!model.ok()) return fail(model.status().message());

  const std::vector<std::string> prompts = make_prompts(o);
  std::vector<std::string> bodies;
  bodies.reserve(prompts.size());
  for (const std::string& prompt : prompts) bodies.push_back(request_body(o, endpoint, *model, prompt));
  const std::vector<int64_t> estimated_prompt_tokens(prompts.size(), o.prompt_len);

  const int n_clients = static_cast<int>(std::min<int64_t>(o.concurrency, o.n_requests));
  if (!o.json) {
    std::fprintf(stderr, "bench-serve: %lld requests to %s%s, %d at a time, ~%d prompt tokens (%d shared), %d generated\n",
                 static_cast<long long>(o.n_requests), o.url.c_str(), path.c_str(), n_clients, o.prompt_len,
                 o.shared_prefix, o.gen_len);
  }

  // results[i] is written only by the client that took request i, read after join().
  std::vector<RequestResult> results(prompts.size());
  std::atomic<int64_t> next_request{0};
  const auto io_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000));
  const SteadyClock::time_point start = SteadyClock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < n_clients; ++c) {
    clients.emplace_back([&] {
      HttpConnection connection(*url, io_timeout);
      for (int64_t i; (i = next_request.fetch_add(1)) < o.n_requests;) {
        results[static_cast<size_t>(i)] = run_request(connection, o, endpoint, path, bodies[static_cast<size_t>(i)]);
      }
    });
  }
  for (std::thread& client : clients) client.join();
  const double duration_s = std::max(1e-9, std::chrono::duration<double>(SteadyClock::now() - start).count());

  const BenchReport report = make_report(results, estimated_prompt_tokens, duration_s);
  if (o.json) {
    print_json(o, *model, report);
  } else {
    print_text(o, *model, report);
  }
  return report.n_failed == 0 ? 0 : 1;
}

}  // namespace

void register_bench_serve(CLI::App& app) {
  auto o = std::make_shared<BenchServeOptions>();
  CLI::App* cmd = app.add_subcommand("bench-serve", "Load-test an OpenAI-compatible streaming server (like vLLM's benchmark)");
  cmd->add_option("--url", o->url, "Server URL, http://HOST:PORT (plain HTTP only)")->capture_default_str();
  cmd->add_option("-c,--concurrency", o->concurrency, "Clients, each with one request in flight")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  cmd->add_option("-n,--num-requests", o->n_requests, "Requests in all")->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  cmd->add_option("--prompt-len", o->prompt_len, "Prompt length in words (about one token each)")
      ->capture_default_str()->check(CLI::Range(1, 1 << 22));
  cmd->add_option("--gen-len", o->gen_len, "Tokens to generate per request (max_tokens, with ignore_eos)")
      ->capture_default_str()->check(CLI::Range(1, 1 << 22));
  cmd->add_option("--shared-prefix", o->shared_prefix, "Leading prompt words identical in every request")
      ->capture_default_str()->check(CLI::Range(0, 1 << 22));
  cmd->add_option("--model", o->model, "Model name to send (default: the first of GET /v1/models)");
  cmd->add_option("--api-key", o->api_key, "Send 'Authorization: Bearer KEY'")->envname("TOKENMILL_API_KEY");
  cmd->add_option("--seed", o->seed, "Seed of the random prompts")->capture_default_str();
  cmd->add_option("--endpoint", o->endpoint, "completions (/v1/completions) or chat (/v1/chat/completions)")
      ->capture_default_str()->check(CLI::IsMember({"completions", "chat"}));
  cmd->add_option("--timeout", o->timeout_s, "Seconds to wait for the server to send anything")
      ->capture_default_str()->check(CLI::Range(0.001, 86400.0));
  cmd->add_flag("--json", o->json, "Print one JSON object (vLLM's field names) instead of the table");
  cmd->callback([o] { exit_code() = bench_serve(*o); });
}

}  // namespace tokenmill::cli
