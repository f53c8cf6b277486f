// GET /health, GET /ready and GET /metrics (Prometheus text exposition format 0.0.4).
//
// /metrics carries tokenmill_* series and, unless turned off, the same values again under
// the vllm:* names (with vLLM's model_name label) that LLM-aware routers and autoscalers
// read: the Gateway API Inference Extension's endpoint picker, llm-d, vLLM's router.
#include <cstdio>
#include <cstdlib>

#include "ops/kv_storage.h"

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

// A label value escaped as the format asks: backslash, quote, newline.
std::string label_value(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out;
}

// labels: "" or the inside of the braces, e.g. model_name="x".
std::string braced(const std::string& labels) { return labels.empty() ? "" : "{" + labels + "}"; }

void scalar(std::string& out, const char* name, const char* type, const char* help, double value,
            const std::string& labels = "") {
  family(out, name, type, help);
  out += name + braced(labels) + " " + number(value) + "\n";
}

void histogram(std::string& out, const char* name, const char* help, const engine::Histogram::Snapshot& h,
               const std::string& labels = "") {
  family(out, name, "histogram", help);
  const std::string more = labels.empty() ? "" : "," + labels;
  for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
    out += std::string(name) + "_bucket{le=\"" + number(h.upper_bounds[i]) + "\"" + more + "} " +
           std::to_string(i < h.cumulative_counts.size() ? h.cumulative_counts[i] : h.count) + "\n";
  }
  out += std::string(name) + "_bucket{le=\"+Inf\"" + more + "} " + std::to_string(h.count) + "\n";
  out += std::string(name) + "_sum" + braced(labels) + " " + number(h.sum) + "\n";
  out += std::string(name) + "_count" + braced(labels) + " " + std::to_string(h.count) + "\n";
}

// Finished requests by finish reason, every reason present (0 before the first).
std::map<std::string, uint64_t> requests_by_reason(const engine::EngineMetrics::Snapshot& m) {
  std::map<std::string, uint64_t> by_reason = {{"stop", 0}, {"length", 0}, {"cancelled", 0}, {"error", 0}};
  for (const auto& [reason, n] : m.requests_total_by_finish_reason) by_reason[reason] = n;
  return by_reason;
}

// The vllm:* series: the values of the tokenmill_* ones under vLLM's names and labels.
void render_vllm_metrics(std::string& out, const engine::EngineMetrics::Snapshot& m, const RouteContext& context) {
  const std::string model = "model_name=\"" + label_value(context.model.name()) + "\"";
  const auto count = [](auto n) { return static_cast<double>(n); };
  scalar(out, "vllm:num_requests_running", "gauge", "Requests in the running batch.", count(m.requests_running),
         model);
  scalar(out, "vllm:num_requests_waiting", "gauge", "Requests waiting to be scheduled.", count(m.requests_waiting),
         model);
  scalar(out, "vllm:kv_cache_usage_perc", "gauge", "KV cache usage as a fraction (1 = full).",
         m.kv_cache_usage_ratio, model);
  scalar(out, "vllm:gpu_cache_usage_perc", "gauge", "KV cache usage as a fraction (1 = full; the older name).",
         m.kv_cache_usage_ratio, model);
  scalar(out, "vllm:prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.",
         count(m.prefix_cache_queries_total), model);
  scalar(out, "vllm:prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache.",
         count(m.prefix_cache_hits_total), model);
  scalar(out, "vllm:prompt_tokens_total", "counter", "Prompt tokens processed.", count(m.prompt_tokens_total),
         model);
  scalar(out, "vllm:generation_tokens_total", "counter", "Tokens generated.", count(m.generation_tokens_total),
         model);
  scalar(out, "vllm:num_preemptions_total", "counter", "Running sequences preempted for lack of KV blocks.",
         count(m.preemptions_total), model);
  family(out, "vllm:request_success_total", "counter", "Finished requests by finish reason.");
  for (const auto& [reason, n] : requests_by_reason(m)) {
    if (reason != "stop" && reason != "length") continue;  // vLLM counts abort apart
    out += "vllm:request_success_total{finished_reason=\"" + reason + "\"," + model + "} " + std::to_string(n) +
           "\n";
  }
  const engine::EngineConfig& config = context.model.engine().config();
  const std::string cache_labels = "block_size=\"" + std::to_string(config.block_size) + "\",num_gpu_blocks=\"" +
                                   std::to_string(m.kv_blocks_total) + "\",num_cpu_blocks=\"0\",cache_dtype=\"" +
                                   ops::kv_type_name(config.kv_type) + "\",enable_prefix_caching=\"" +
                                   (config.prefix_caching ? "True" : "False") + "\"";
  scalar(out, "vllm:cache_config_info", "gauge", "The KV cache's configuration (the value is 1).", 1, cache_labels);
  histogram(out, "vllm:time_to_first_token_seconds", "Seconds from a request's arrival to its first token.",
            m.time_to_first_token, model);
  histogram(out, "vllm:inter_token_latency_seconds", "Seconds between consecutive tokens of one choice.",
            m.inter_token_latency, model);
  histogram(out, "vllm:e2e_request_latency_seconds", "Seconds from a request's arrival to its last token.",
            m.e2e_request_latency, model);
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
  for (const auto& [reason, n] : requests_by_reason(m)) {
    out += "tokenmill_requests_total{finish_reason=\"" + label_value(reason) + "\"} " + std::to_string(n) + "\n";
  }
  if (!context.replica_id.empty()) {
    scalar(out, "tokenmill_replica_info", "gauge", "The replica's id and model (the value is 1).", 1,
           "replica_id=\"" + label_value(context.replica_id) + "\",model_name=\"" + label_value(context.model.name()) +
               "\"");
  }
  if (context.vllm_metrics) render_vllm_metrics(out, m, context);
  return out;
}

}  // namespace

void add_metrics_routes(Router& router, const RouteContext& context) {
  // Alive: answers 200 as long as the process serves at all, draining or not, so that
  // an orchestrator never restarts a replica that is finishing its work.
  router.add("GET", "/health", [&context](const HttpRequest&, std::shared_ptr<Responder> out) {
    Json body = {{"status", context.ready.load() ? "ok" : "draining"}, {"model", context.model.name()}};
    if (!context.replica_id.empty()) body["replica_id"] = context.replica_id;
    out->send(200, "application/json", dump_json(body));
  });
  // Ready for new work: the model is loaded (the server only listens once it is) and the
  // replica is not draining.
  router.add("GET", "/ready", [&context](const HttpRequest&, std::shared_ptr<Responder> out) {
    const bool ready = context.ready.load() && !context.calls.draining();
    Json body = {{"status", ready ? "ready" : "draining"}, {"model", context.model.name()}};
    if (!context.replica_id.empty()) body["replica_id"] = context.replica_id;
    out->send(ready ? 200 : 503, "application/json", dump_json(body));
  });
  router.add("GET", "/metrics", [&context](const HttpRequest&, std::shared_ptr<Responder> out) {
    out->send(200, "text/plain; version=0.0.4; charset=utf-8",
              render_metrics(context.model.engine().metrics().snapshot(), context));
  });
}

}  // namespace tokenmill::server
