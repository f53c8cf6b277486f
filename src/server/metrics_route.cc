// GET /health and GET /metrics (Prometheus text exposition format 0.0.4).
#include <cstdio>
#include <cstdlib>

#include "server/json_fields.h"
#include "server/route_context.h"

namespace tokenmill::server {

namespace {

// The shortest form that reads back as the same double ("0.005", not "0.0050000000000000001").
std::string number(double value) {
  char out[64];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(out, sizeof out, "%.*g", precision, value);
    if (std::strtod(out, nullptr) == value) break;
  }
  return out;
}

void family(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += " ";
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += " ";
  out += type;
  out += "\n";
}

void scalar(std::string& out, const char* name, const char* type, const char* help, double value) {
  family(out, name, type, help);
  out += name;
  out += " " + number(value) + "\n";
}

void histogram(std::string& out, const char* name, const char* help, const engine::Histogram::Snapshot& h) {
  family(out, name, "histogram", help);
  for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
    out += std::string(name) + "_bucket{le=\"" + number(h.upper_bounds[i]) + "\"} " +
           std::to_string(i < h.cumulative_counts.size() ? h.cumulative_counts[i] : h.count) + "\n";
  }
  out += std::string(name) + "_bucket{le=\"+Inf\"} " + std::to_string(h.count) + "\n";
  out += std::string(name) + "_sum " + number(h.sum) + "\n";
  out += std::string(name) + "_count " + std::to_string(h.count) + "\n";
}

std::string render_metrics(const engine::EngineMetrics::Snapshot& m, const RouteContext& context) {
  std::string out;
  const CallTracker& calls = context.calls;
  if (context.http != nullptr) {
    scalar(out, "tokenmill_http_connections", "gauge", "Open HTTP connections.",
           static_cast<double>(context.http->n_connections()));
    scalar(out, "tokenmill_http_connections_refused_total", "counter",
           "Connections answered 503 and closed because --max-connections were open.",
           static_cast<double>(context.http->n_refused_connections()));
    scalar(out, "tokenmill_http_slow_readers_dropped_total", "counter",
           "Streaming clients dropped (their requests cancelled) for reading slower than --max-stream-buffer allows.",
           static_cast<double>(context.http->n_dropped_slow_readers()));
  }
  scalar(out, "tokenmill_requests_refused_total", "counter",
         "Requests answered 429 because the server held its limit of queued requests (--max-queue).",
         static_cast<double>(calls.n_refused()));
  histogram(out, "tokenmill_time_to_first_token_seconds", "Seconds from a request's arrival to its first token.",
            m.time_to_first_token);
  histogram(out, "tokenmill_inter_token_latency_seconds", "Seconds between consecutive tokens of one choice.",
            m.inter_token_latency);
  histogram(out, "tokenmill_e2e_request_latency_seconds", "Seconds from a request's arrival to its last token.",
            m.e2e_request_latency);
  scalar(out, "tokenmill_requests_running", "gauge", "Requests in the running batch.",
         static_cast<double>(m.requests_running));
  scalar(out, "tokenmill_requests_waiting", "gauge", "Requests waiting to be scheduled.",
         static_cast<double>(m.requests_waiting));
  scalar(out, "tokenmill_kv_cache_usage_ratio", "gauge", "Fraction of KV cache blocks in use (0..1).",
         m.kv_cache_usage_ratio);
  scalar(out, "tokenmill_kv_blocks_total", "gauge", "KV cache blocks in the pool.",
         static_cast<double>(m.kv_blocks_total));
  scalar(out, "tokenmill_kv_blocks_free", "gauge", "KV cache blocks no sequence holds (cached prefixes included).",
         static_cast<double>(m.kv_blocks_free));
  scalar(out, "tokenmill_kv_window_slots_total", "gauge", "Sliding-window layers' KV slots (0: none kept apart).",
         static_cast<double>(m.kv_window_slots_total));
  scalar(out, "tokenmill_kv_window_slots_held", "gauge", "Sliding-window slots held by sequences.",
         static_cast<double>(m.kv_window_slots_held));
  scalar(out, "tokenmill_prompt_tokens_total", "counter", "Prompt tokens processed.",
         static_cast<double>(m.prompt_tokens_total));
  scalar(out, "tokenmill_generation_tokens_total", "counter", "Tokens generated.",
         static_cast<double>(m.generation_tokens_total));
  scalar(out, "tokenmill_prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.",
         static_cast<double>(m.prefix_cache_queries_total));
  scalar(out, "tokenmill_prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache.",
         static_cast<double>(m.prefix_cache_hits_total));
  scalar(out, "tokenmill_preemptions_total", "counter", "Running sequences preempted for lack of KV blocks.",
         static_cast<double>(m.preemptions_total));

  scalar(out, "tokenmill_spec_decode_num_drafts_total", "counter", "Speculative verifications (a sequence's drafts checked in one step).",
         static_cast<double>(m.spec_drafts_total));
  scalar(out, "tokenmill_spec_decode_num_draft_tokens_total", "counter", "Draft tokens proposed.",
         static_cast<double>(m.spec_draft_tokens_total));
  scalar(out, "tokenmill_spec_decode_num_accepted_tokens_total", "counter", "Draft tokens accepted.",
         static_cast<double>(m.spec_accepted_tokens_total));
  family(out, "tokenmill_spec_decode_num_accepted_tokens_per_pos_total", "counter",
         "Draft tokens accepted, by position in the draft (0: the first).");
  for (size_t i = 0; i < m.spec_accepted_per_position.size(); ++i) {
    out += "tokenmill_spec_decode_num_accepted_tokens_per_pos_total{position=\"" + std::to_string(i) + "\"} " +
           std::to_string(m.spec_accepted_per_position[i]) + "\n";
  }

  family(out, "tokenmill_requests_total", "counter", "Finished requests by finish reason.");
  std::map<std::string, uint64_t> by_reason = {{"stop", 0}, {"length", 0}, {"cancelled", 0}, {"error", 0}};
  for (const auto& [reason, n] : m.requests_total_by_finish_reason) by_reason[reason] = n;
  for (const auto& [reason, n] : by_reason) {
    std::string label;  // escape as the format asks: backslash, quote, newline
    for (char c : reason) {
      if (c == '\n') {
        label += "\\n";
        continue;
      }
      if (c == '\\' || c == '"') label += '\\';
      label += c;
    }
    out += "tokenmill_requests_total{finish_reason=\"" + label + "\"} " + std::to_string(n) + "\n";
  }
  return out;
}

}  // namespace

void add_metrics_routes(Router& router, const RouteContext& context) {
  router.add("GET", "/health", [&context](const HttpRequest&, std::shared_ptr<Responder> out) {
    if (context.calls.draining()) {
      out->send(503, "application/json", dump_json(Json{{"status", "shutting down"}}));
      return;
    }
    out->send(200, "application/json", dump_json(Json{{"status", "ok"}, {"model", context.model.name()}}));
  });
  router.add("GET", "/metrics", [&context](const HttpRequest&, std::shared_ptr<Responder> out) {
    out->send(200, "text/plain; version=0.0.4; charset=utf-8",
              render_metrics(context.model.engine().metrics().snapshot(), context));
  });
}

}  // namespace tokenmill::server
