#include "server/batch_runner.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <vector>

#include "server/api_error.h"
#include "server/captured_response.h"

namespace tokenmill::server {

namespace {

// Fields of the stored batch object that only the runner reads.
constexpr const char* kFinalStatus = "x_tokenmill_final_status";

int64_t now() { return static_cast<int64_t>(std::time(nullptr)); }

struct InputLine {
  int64_t line = 0;
  std::string custom_id;
  Json body;
};

// Reads and checks a batch input file; the errors name their 1-based lines.
std::vector<InputLine> read_input(const std::string& path, const std::string& endpoint, const BatchLimits& limits,
                                  const ModelSet& models, Json& errors) {
  std::vector<InputLine> out;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    errors.push_back({{"code", "file_not_found"}, {"message", "The input file is gone"}, {"param", nullptr}, {"line", nullptr}});
    return out;
  }
  std::set<std::string> seen;
  std::set<std::string> known_models;
  std::string text;
  int64_t line_no = 0;
  auto error = [&](const char* code, const std::string& message) {
    if (errors.size() < 100) errors.push_back({{"code", code}, {"message", message}, {"param", nullptr}, {"line", line_no}});
  };
  while (std::getline(in, text)) {
    ++line_no;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    if (static_cast<int64_t>(out.size()) >= limits.max_requests) {
      error("batch_too_large", "A batch may hold at most " + std::to_string(limits.max_requests) + " requests");
      break;
    }
    const Json request = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!request.is_object()) {
      error("invalid_json_line", "This line is not a JSON object (or not valid UTF-8)");
      continue;
    }
    const auto custom_id = request.find("custom_id");
    if (custom_id == request.end() || !custom_id->is_string() || custom_id->get<std::string>().empty()) {
      error("missing_required_parameter", "Each request needs a 'custom_id' string");
      continue;
    }
    if (!seen.insert(custom_id->get<std::string>()).second) {
      error("duplicate_custom_id", "The custom_id '" + custom_id->get<std::string>() + "' appears more than once");
      continue;
    }
    const auto method = request.find("method");
    if (method == request.end() || *method != "POST") {
      error("invalid_method", "'method' must be \"POST\"");
      continue;
    }
    const auto url = request.find("url");
    if (url == request.end() || *url != endpoint) {
      error("mismatched_endpoint", "'url' must be the batch's endpoint " + endpoint);
      continue;
    }
    const auto body = request.find("body");
    if (body == request.end() || !body->is_object()) {
      error("invalid_request", "'body' must be a JSON object");
      continue;
    }
    const auto model = body->find("model");
    const std::string model_name = model != body->end() && model->is_string() ? model->get<std::string>() : "";
    if (!known_models.count(model_name)) {
      if (!models.knows(model_name)) {
        error("model_not_found", "The model '" + model_name + "' does not exist");
        continue;
      }
      known_models.insert(model_name);
    }
    out.push_back({line_no, custom_id->get<std::string>(), *body});
  }
  if (out.empty() && errors.empty()) {
    errors.push_back({{"code", "empty_file"}, {"message", "The input file has no requests"}, {"param", nullptr},
                      {"line", nullptr}});
  }
  return out;
}

// Writes rows (one JSON line each) into a new file of the state; "" when there are none.
Result<std::string> write_result_file(state::BatchState& state, const std::vector<const state::ResultRow*>& rows,
                                      const std::string& filename) {
  if (rows.empty()) return std::string();
  const std::string temp = state.temp_path();
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    for (const state::ResultRow* row : rows) out << row->json << '\n';
    out.flush();
    if (!out) return io_error("cannot write " + temp);
  }
  if (std::FILE* f = std::fopen(temp.c_str(), "rb")) {
    ::fsync(fileno(f));
    std::fclose(f);
  }
  auto record = state.add_file(temp, "batch_output", filename);
  if (!record.ok()) return record.status();
  return record->id;
}

}  // namespace

Json public_batch(Json batch) {
  batch.erase(kFinalStatus);
  return batch;
}

BatchRunner::BatchRunner(state::BatchState& state, const RouteContext& context, BatchLimits limits)
    : state_(state), context_(context), limits_(limits) {
  thread_ = std::thread([this] { run(); });
}

BatchRunner::~BatchRunner() { stop(); }

void BatchRunner::wake() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

void BatchRunner::stop() {
  if (stopping_.exchange(true)) return;
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  strand_.stop();
}

bool BatchRunner::save(const Json& batch, const std::string& expected_status) {
  state::BatchRow row;
  row.id = batch["id"].get<std::string>();
  row.status = batch["status"].get<std::string>();
  row.object = batch.dump();
  row.created_at = batch["created_at"].get<int64_t>();
  auto updated = state_.update_batch(row, expected_status);
  return updated.ok() && *updated;
}

std::string BatchRunner::stored_status(const std::string& id) const {
  auto row = state_.batch(id);
  return row.ok() ? row->status : "";
}

void BatchRunner::run() {
  while (!stopping_.load()) {
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(500), [&] { return woken_ || stopping_.load(); });
      woken_ = false;
    }
    if (stopping_.load()) break;
    for (const state::BatchRow& row : state_.batches_with_status({"validating", "in_progress", "cancelling",
                                                                  "finalizing"})) {
      if (stopping_.load()) break;
      Json batch = Json::parse(row.object, nullptr, false);
      if (!batch.is_object()) continue;
      batch["status"] = row.status;
      if (row.status == "validating") validate(batch);
      if (batch["status"] == "in_progress" || batch["status"] == "cancelling") execute(batch);
      if (batch["status"] == "finalizing") {
        finalize(batch, batch.value(kFinalStatus, std::string("completed")));
      }
    }
  }
}

void BatchRunner::validate(Json& batch) {
  Json errors = Json::array();
  const std::string input = batch["input_file_id"].get<std::string>();
  const auto file = state_.file(input);
  std::vector<InputLine> lines;
  if (!file.ok()) {
    errors.push_back({{"code", "file_not_found"}, {"message", file.status().message()}, {"param", "input_file_id"},
                      {"line", nullptr}});
  } else {
    lines = read_input(state_.file_path(input), batch["endpoint"].get<std::string>(), limits_, context_.models, errors);
  }
  if (!errors.empty()) {
    batch["status"] = "failed";
    batch["failed_at"] = now();
    batch["errors"] = {{"object", "list"}, {"data", errors}};
  } else {
    batch["status"] = "in_progress";
    batch["in_progress_at"] = now();
    batch["request_counts"] = {{"total", lines.size()}, {"completed", 0}, {"failed", 0}};
  }
  if (!save(batch, "validating")) batch["status"] = stored_status(batch["id"]);  // cancelled while being read
}

void BatchRunner::execute(Json& batch) {
  const std::string id = batch["id"].get<std::string>();
  Json errors = Json::array();
  std::vector<InputLine> lines;
  if (const auto file = state_.file(batch["input_file_id"].get<std::string>()); file.ok()) {
    lines = read_input(state_.file_path(file->id), batch["endpoint"].get<std::string>(), limits_, context_.models,
                       errors);
  }
  const std::set<int64_t> done = state_.lines_done(id);
  const bool chat = batch["endpoint"] == "/v1/chat/completions";

  // Shared with the answers' callbacks on the strand.
  struct Progress {
    std::mutex mu;
    std::condition_variable cv;
    int in_flight = 0;
    int64_t completed = 0, failed = 0;
    // In flight, with the flag that drops its answer (set when it is cancelled).
    std::map<int64_t, std::pair<std::shared_ptr<CapturedResponse>, std::shared_ptr<std::atomic<bool>>>> running;
  };
  auto progress = std::make_shared<Progress>();
  for (const state::ResultRow& row : state_.results(id)) (row.is_error ? progress->failed : progress->completed)++;

  auto record = [this, id, progress](const InputLine& line, int status, const std::string& body) {
    Json parsed = Json::parse(body, nullptr, false);
    Json out = {{"id", state::new_state_id("batch_req_")},
                {"custom_id", line.custom_id},
                {"response",
                 {{"status_code", status},
                  {"request_id", parsed.is_object() && parsed.contains("id") ? parsed["id"] : Json("")},
                  {"body", parsed.is_discarded() ? Json(body) : parsed}}},
                {"error", nullptr}};
    const bool is_error = status != 200;
    (void)state_.add_result(id, {line.line, line.custom_id, is_error, dump_json(out)});
    std::lock_guard lock(progress->mu);
    (is_error ? progress->failed : progress->completed)++;
  };

  std::string final_status = "completed";
  size_t next = 0;
  auto last_saved = std::chrono::steady_clock::now();
  while (true) {
    const std::string stored = stored_status(id);
    const bool cancelling = stored == "cancelling" || batch["status"] == "cancelling";
    const bool expired = now() >= batch.value("expires_at", INT64_MAX);
    if (cancelling || expired || stopping_.load()) {
      std::vector<std::shared_ptr<CapturedResponse>> running;
      {
        std::lock_guard lock(progress->mu);
        for (auto& [line, entry] : progress->running) {
          entry.second->store(true);
          running.push_back(entry.first);
        }
      }
      for (auto& response : running) response->cancel();
      std::unique_lock lock(progress->mu);
      progress->cv.wait(lock, [&] { return progress->in_flight == 0; });
      if (stopping_.load()) return;  // resumes after a restart
      final_status = cancelling ? "cancelled" : "expired";
      if (cancelling && batch.value("cancelling_at", Json(nullptr)).is_null()) {
        // The cancel route wrote the time it was asked; keep it.
        const auto row = state_.batch(id);
        const Json stored_batch = row.ok() ? Json::parse(row->object, nullptr, false) : Json();
        batch["cancelling_at"] = stored_batch.is_object() && stored_batch.value("cancelling_at", Json(nullptr)).is_number()
                                     ? stored_batch["cancelling_at"]
                                     : Json(now());
      }
      break;
    }
    // Top up the requests in flight.
    while (next < lines.size()) {
      {
        std::lock_guard lock(progress->mu);
        if (progress->in_flight >= limits_.max_in_flight) break;
      }
      const InputLine& line = lines[next++];
      if (done.count(line.line)) continue;
      Json body = line.body;
      body.erase("stream");
      body.erase("stream_options");
      auto dropped = std::make_shared<std::atomic<bool>>(false);
      auto finished = [this, progress, record, line, dropped](int status, std::string answer) {
        if (!dropped->load() && !stopping_.load()) record(line, status, answer);
        std::lock_guard lock(progress->mu);
        progress->running.erase(line.line);
        --progress->in_flight;
        progress->cv.notify_all();
      };
      auto response = std::make_shared<CapturedResponse>(strand_, finished);
      {
        std::lock_guard lock(progress->mu);
        ++progress->in_flight;
        progress->running[line.line] = {response, dropped};
      }
      try {
        start_openai_request(context_, chat, body, response, engine::Priority::kBatch);
      } catch (const ApiError& error) {
        response->send(error.status, "application/json", openai_error_body(error), {});
      } catch (const std::exception& e) {
        response->send(500, "application/json", openai_error_body(server_error(e.what())), {});
      }
    }
    {
      std::unique_lock lock(progress->mu);
      if (next >= lines.size() && progress->in_flight == 0) break;
      progress->cv.wait_for(lock, std::chrono::milliseconds(200));
      batch["request_counts"] = {{"total", lines.size()}, {"completed", progress->completed},
                                 {"failed", progress->failed}};
    }
    if (std::chrono::steady_clock::now() - last_saved > std::chrono::milliseconds(500)) {
      last_saved = std::chrono::steady_clock::now();
      if (batch["status"] == "in_progress" && !save(batch, "in_progress")) batch["status"] = stored_status(id);
    }
  }
  batch["request_counts"] = {{"total", lines.size()}, {"completed", progress->completed}, {"failed", progress->failed}};
  const std::string was = stored_status(id);
  if (was == "cancelling") final_status = "cancelled";  // a cancel that came as the last request finished
  batch["status"] = "finalizing";
  batch["finalizing_at"] = now();
  batch[kFinalStatus] = final_status;
  if (!save(batch, was)) batch["status"] = stored_status(id);
}

void BatchRunner::finalize(Json& batch, const std::string& final_status) {
  const std::string id = batch["id"].get<std::string>();
  const std::vector<state::ResultRow> rows = state_.results(id);
  std::vector<const state::ResultRow*> outputs, errors;
  for (const state::ResultRow& row : rows) (row.is_error ? errors : outputs).push_back(&row);
  auto output = write_result_file(state_, outputs, id + "_output.jsonl");
  auto error = write_result_file(state_, errors, id + "_error.jsonl");
  if (!output.ok() || !error.ok()) return;  // the disk refused: try again at the next tick
  batch["output_file_id"] = output->empty() ? Json(nullptr) : Json(*output);
  batch["error_file_id"] = error->empty() ? Json(nullptr) : Json(*error);
  batch["status"] = final_status;
  batch[final_status + "_at"] = now();
  batch.erase(kFinalStatus);
  save(batch, "finalizing");
}

}  // namespace tokenmill::server
