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

// Finished requests by finish reason, every reason present (0 before the first).
std::map<std::string, uint64_t> requests_by_reason(const engine::EngineMetrics::Snapshot& m) {
  std::map<std::string, uint64_t> by_reason = {{"stop", 0}, {"length", 0}, {"cancelled", 0}, {"error", 0}};
  for (const auto& [reason, n] : m.requests_total_by_finish_reason) by_reason[reason] = n;
  return by_reason;
}

// One loaded model's engine series: its label set ("" when the server serves one model
// only) and its values.
struct ModelSeries {
  std::string labels;       // model="gemma3:latest" for tokenmill_*, or ""
  std::string vllm_labels;  // model_name="..." (always: routers expect it)
  engine::EngineMetrics::Snapshot m;
  const engine::EngineConfig* config;
};

using Value = double (*)(const engine::EngineMetrics::Snapshot&);

void scalar_each(std::string& out, const char* name, const char* type, const char* help,
                 const std::vector<ModelSeries>& models, bool vllm, Value value) {
  family(out, name, type, help);
  for (const ModelSeries& s : models) out += name + braced(vllm ? s.vllm_labels : s.labels) + " " + number(value(s.m)) + "\n";
}

void histogram_lines(std::string& out, const char* name, const engine::Histogram::Snapshot& h, const std::string& labels) {
  const std::string more = labels.empty() ? "" : "," + labels;
  for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
    out += std::string(name) + "_bucket{le=\"" + number(h.upper_bounds[i]) + "\"" + more + "} " +
           std::to_string(i < h.cumulative_counts.size() ? h.cumulative_counts[i] : h.count) + "\n";
  }
  out += std::string(name) + "_bucket{le=\"+Inf\"" + more + "} " + std::to_string(h.count) + "\n";
  out += std::string(name) + "_sum" + braced(labels) + " " + number(h.sum) + "\n";
  out += std::string(name) + "_count" + braced(labels) + " " + std::to_string(h.count) + "\n";
}

void histogram_each(std::string& out, const char* name, const char* help, const std::vector<ModelSeries>& models,
                    bool vllm, const engine::Histogram::Snapshot engine::EngineMetrics::Snapshot::*field) {
  family(out, name, "histogram", help);
  for (const ModelSeries& s : models) histogram_lines(out, name, s.m.*field, vllm ? s.vllm_labels : s.labels);
}

std::string with(const std::string& labels, const std::string& more) {
  return labels.empty() ? more : more + "," + labels;
}

// The vllm:* series: the values of the tokenmill_* ones under vLLM's names and labels.
void render_vllm_metrics(std::string& out, const std::vector<ModelSeries>& models) {
  using S = engine::EngineMetrics::Snapshot;
  scalar_each(out, "vllm:num_requests_running", "gauge", "Requests in the running batch.", models, true,
              [](const S& m) { return double(m.requests_running); });
  scalar_each(out, "vllm:num_requests_waiting", "gauge", "Requests waiting to be scheduled.", models, true,
              [](const S& m) { return double(m.requests_waiting); });
  scalar_each(out, "vllm:kv_cache_usage_perc", "gauge", "KV cache usage as a fraction (1 = full).", models, true,
              [](const S& m) { return m.kv_cache_usage_ratio; });
  scalar_each(out, "vllm:gpu_cache_usage_perc", "gauge", "KV cache usage as a fraction (1 = full; the older name).",
              models, true, [](const S& m) { return m.kv_cache_usage_ratio; });
  scalar_each(out, "vllm:prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.", models,
              true, [](const S& m) { return double(m.prefix_cache_queries_total); });
  scalar_each(out, "vllm:prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache.", models, true,
              [](const S& m) { return double(m.prefix_cache_hits_total); });
  scalar_each(out, "vllm:prompt_tokens_total", "counter", "Prompt tokens processed.", models, true,
              [](const S& m) { return double(m.prompt_tokens_total); });
  scalar_each(out, "vllm:generation_tokens_total", "counter", "Tokens generated.", models, true,
              [](const S& m) { return double(m.generation_tokens_total); });
  scalar_each(out, "vllm:num_preemptions_total", "counter", "Running sequences preempted for lack of KV blocks.",
              models, true, [](const S& m) { return double(m.preemptions_total); });
  family(out, "vllm:request_success_total", "counter", "Finished requests by finish reason.");
  for (const ModelSeries& s : models) {
    for (const auto& [reason, n] : requests_by_reason(s.m)) {
      if (reason != "stop" && reason != "length") continue;  // vLLM counts abort apart
      out += "vllm:request_success_total{finished_reason=\"" + reason + "\"," + s.vllm_labels + "} " +
             std::to_string(n) + "\n";
    }
  }
  family(out, "vllm:cache_config_info", "gauge", "The KV cache's configuration (the value is 1).");
  for (const ModelSeries& s : models) {
    const engine::EngineConfig& config = *s.config;
    const std::string cache_labels = "block_size=\"" + std::to_string(config.block_size) + "\",num_gpu_blocks=\"" +
                                     std::to_string(s.m.kv_blocks_total) + "\",num_cpu_blocks=\"0\",cache_dtype=\"" +
                                     ops::kv_type_name(config.kv_type) + "\",enable_prefix_caching=\"" +
                                     (config.prefix_caching ? "True" : "False") + "\"";
    out += "vllm:cache_config_info" + braced(models.size() > 1 ? cache_labels + "," + s.vllm_labels : cache_labels) +
           " 1\n";
  }
  histogram_each(out, "vllm:time_to_first_token_seconds", "Seconds from a request's arrival to its first token.",
                 models, true, &S::time_to_first_token);
  histogram_each(out, "vllm:inter_token_latency_seconds", "Seconds between consecutive tokens of one choice.", models,
                 true, &S::inter_token_latency);
  histogram_each(out, "vllm:e2e_request_latency_seconds", "Seconds from a request's arrival to its last token.",
                 models, true, &S::e2e_request_latency);
}

std::string render_metrics(const RouteContext& context) {
  using S = engine::EngineMetrics::Snapshot;
  std::vector<ModelSeries> models;
  // With a store, any of several models may be loaded: each series names its model.
  const bool label = context.models.store() != nullptr;
  for (const LoadedInfo& info : context.models.loaded()) {
    const std::string name = label_value(info.model->name());
    models.push_back({label ? "model=\"" + name + "\"" : "", "model_name=\"" + name + "\"",
                      info.model->engine().metrics().snapshot(), &info.model->engine().config()});
  }
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
  if (const ResponseCache* cache = context.response_cache) {
    scalar(out, "tokenmill_response_cache_hits_total", "counter", "Requests answered from the response cache.",
           static_cast<double>(cache->hits()));
    scalar(out, "tokenmill_response_cache_misses_total", "counter",
           "Cacheable requests the response cache did not hold.", static_cast<double>(cache->misses()));
    scalar(out, "tokenmill_response_cache_bytes", "gauge", "Bytes the response cache holds.",
           static_cast<double>(cache->bytes()));
  }
  scalar(out, "tokenmill_requests_refused_total", "counter",
         "Requests answered 429 because the server held its limit of queued requests (--max-queue).",
         static_cast<double>(calls.n_refused()));
  if (label) {
    scalar(out, "tokenmill_models_loaded", "gauge", "Models loaded (the pinned one included).",
           static_cast<double>(models.size()));
  }
  histogram_each(out, "tokenmill_time_to_first_token_seconds", "Seconds from a request's arrival to its first token.",
                 models, false, &S::time_to_first_token);
  histogram_each(out, "tokenmill_inter_token_latency_seconds", "Seconds between consecutive tokens of one choice.",
                 models, false, &S::inter_token_latency);
  histogram_each(out, "tokenmill_e2e_request_latency_seconds", "Seconds from a request's arrival to its last token.",
                 models, false, &S::e2e_request_latency);
  scalar_each(out, "tokenmill_requests_running", "gauge", "Requests in the running batch.", models, false,
              [](const S& m) { return double(m.requests_running); });
  scalar_each(out, "tokenmill_requests_waiting", "gauge", "Requests waiting to be scheduled.", models, false,
              [](const S& m) { return double(m.requests_waiting); });
  scalar_each(out, "tokenmill_kv_cache_usage_ratio", "gauge", "Fraction of KV cache blocks in use (0..1).", models,
              false, [](const S& m) { return m.kv_cache_usage_ratio; });
  scalar_each(out, "tokenmill_kv_blocks_total", "gauge", "KV cache blocks in the pool.", models, false,
              [](const S& m) { return double(m.kv_blocks_total); });
  scalar_each(out, "tokenmill_kv_blocks_free", "gauge", "KV cache blocks no sequence holds (cached prefixes included).",
              models, false, [](const S& m) { return double(m.kv_blocks_free); });
  scalar_each(out, "tokenmill_kv_window_slots_total", "gauge", "Sliding-window layers' KV slots (0: none kept apart).",
              models, false, [](const S& m) { return double(m.kv_window_slots_total); });
  scalar_each(out, "tokenmill_kv_window_slots_held", "gauge", "Sliding-window slots held by sequences.", models, false,
              [](const S& m) { return double(m.kv_window_slots_held); });
  scalar_each(out, "tokenmill_prompt_tokens_total", "counter", "Prompt tokens processed.", models, false,
              [](const S& m) { return double(m.prompt_tokens_total); });
  scalar_each(out, "tokenmill_generation_tokens_total", "counter", "Tokens generated.", models, false,
              [](const S& m) { return double(m.generation_tokens_total); });
  scalar_each(out, "tokenmill_prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.",
              models, false, [](const S& m) { return double(m.prefix_cache_queries_total); });
  scalar_each(out, "tokenmill_prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache.", models,
              false, [](const S& m) { return double(m.prefix_cache_hits_total); });
  scalar_each(out, "tokenmill_preemptions_total", "counter", "Running sequences preempted for lack of KV blocks.",
              models, false, [](const S& m) { return double(m.preemptions_total); });
  scalar_each(out, "tokenmill_batch_steps_abandoned_total", "counter",
              "Forward passes of batch work alone stopped part-way because an interactive request arrived.", models,
              false, [](const S& m) { return double(m.batch_steps_abandoned_total); });

  // The prefix cache's disk tier, for the models that have one.
  std::vector<ModelSeries> with_disk;
  for (const ModelSeries& s : models) {
    if (s.m.kv_disk) with_disk.push_back(s);
  }
  if (!with_disk.empty()) {
    scalar_each(out, "tokenmill_kv_disk_hits_total", "counter", "KV blocks read back from the disk tier.", with_disk,
                false, [](const S& m) { return double(m.kv_disk_counters.hits); });
    scalar_each(out, "tokenmill_kv_disk_misses_total", "counter",
                "Prefix lookups that went on to the disk tier and found no block there.", with_disk, false,
                [](const S& m) { return double(m.kv_disk_counters.misses); });
    scalar_each(out, "tokenmill_kv_disk_writes_total", "counter", "KV blocks written to the disk tier.", with_disk,
                false, [](const S& m) { return double(m.kv_disk_counters.writes); });
    scalar_each(out, "tokenmill_kv_disk_bytes_read_total", "counter", "Bytes of KV block files read.", with_disk, false,
                [](const S& m) { return double(m.kv_disk_counters.bytes_read); });
    scalar_each(out, "tokenmill_kv_disk_bytes_written_total", "counter", "Bytes of KV block files written.", with_disk,
                false, [](const S& m) { return double(m.kv_disk_counters.bytes_written); });
    scalar_each(out, "tokenmill_kv_disk_corrupt_total", "counter",
                "KV block files rejected (checksum, size or header) and deleted.", with_disk, false,
                [](const S& m) { return double(m.kv_disk_counters.corrupt); });
    scalar_each(out, "tokenmill_kv_disk_dropped_total", "counter",
                "KV blocks not written: the write queue full, or the disk full or failing.", with_disk, false,
                [](const S& m) { return double(m.kv_disk_counters.dropped); });
    scalar_each(out, "tokenmill_kv_disk_usage_bytes", "gauge", "Bytes of KV block files on disk.", with_disk, false,
                [](const S& m) { return double(m.kv_disk_counters.usage_bytes); });
    scalar_each(out, "tokenmill_kv_disk_blocks", "gauge", "KV block files on disk.", with_disk, false,
                [](const S& m) { return double(m.kv_disk_counters.n_blocks); });
  }

  scalar_each(out, "tokenmill_spec_decode_num_drafts_total", "counter",
              "Speculative verifications (a sequence's drafts checked in one step).", models, false,
              [](const S& m) { return double(m.spec_drafts_total); });
  scalar_each(out, "tokenmill_spec_decode_num_draft_tokens_total", "counter", "Draft tokens proposed.", models, false,
              [](const S& m) { return double(m.spec_draft_tokens_total); });
  scalar_each(out, "tokenmill_spec_decode_num_accepted_tokens_total", "counter", "Draft tokens accepted.", models,
              false, [](const S& m) { return double(m.spec_accepted_tokens_total); });
  family(out, "tokenmill_spec_decode_num_accepted_tokens_per_pos_total", "counter",
         "Draft tokens accepted, by position in the draft (0: the first).");
  for (const ModelSeries& s : models) {
    for (size_t i = 0; i < s.m.spec_accepted_per_position.size(); ++i) {
      out += "tokenmill_spec_decode_num_accepted_tokens_per_pos_total{" +
             with(s.labels, "position=\"" + std::to_string(i) + "\"") + "} " +
             std::to_string(s.m.spec_accepted_per_position[i]) + "\n";
    }
  }

  family(out, "tokenmill_requests_total", "counter", "Finished requests by finish reason.");
  for (const ModelSeries& s : models) {
    for (const auto& [reason, n] : requests_by_reason(s.m)) {
      out += "tokenmill_requests_total{" + with(s.labels, "finish_reason=\"" + label_value(reason) + "\"") + "} " +
             std::to_string(n) + "\n";
    }
  }
  if (!context.replica_id.empty()) {
    family(out, "tokenmill_replica_info", "gauge", "The replica's id and model (the value is 1).");
    for (const ModelSeries& s : models) {
      out += "tokenmill_replica_info{replica_id=\"" + label_value(context.replica_id) + "\"," + s.vllm_labels + "} 1\n";
    }
  }
  if (context.vllm_metrics) render_vllm_metrics(out, models);
  return out;
}

// The name /health and /ready report: the pinned model's, else "".
std::string health_model_name(const RouteContext& context) {
  const ModelLease pinned = context.models.pinned();
  if (pinned) return pinned->name();
  return context.embeddings != nullptr ? context.embeddings->name : "";
}

}  // namespace

void add_metrics_routes(Router& router, const RouteContext& context) {
  // Alive: answers 200 as long as the process serves at all, draining or not, so that
  // an orchestrator never restarts a replica that is finishing its work.
  router.add("GET", "/health", [&context](const HttpRequest&, std::shared_ptr<Responder> out) {
    Json body = {{"status", context.ready.load() ? "ok" : "draining"}, {"model", health_model_name(context)}};
    if (!context.replica_id.empty()) body["replica_id"] = context.replica_id;
    out->send(200, "application/json", dump_json(body));
  });
  // Ready for new work: the model is loaded (the server only listens once it is) and the
  // replica is not draining.
  router.add("GET", "/ready", [&context](const HttpRequest&, std::shared_ptr<Responder> out) {
    const bool ready = context.ready.load() && !context.calls.draining();
    Json body = {{"status", ready ? "ready" : "draining"}, {"model", health_model_name(context)}};
    if (!context.replica_id.empty()) body["replica_id"] = context.replica_id;
    out->send(ready ? 200 : 503, "application/json", dump_json(body));
  });
  router.add("GET", "/metrics", [&context](const HttpRequest&, std::shared_ptr<Responder> out) {
    out->send(200, "text/plain; version=0.0.4; charset=utf-8",
              render_metrics(context));
  });
}

}  // namespace tokenmill::server
