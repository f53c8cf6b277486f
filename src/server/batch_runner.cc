#include "server/batch_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "base/log.h"
#include "server/batch_lines.h"
#include "server/captured_response.h"

namespace tokenmill::server {

namespace {

// Fields of the stored batch object that only the runner reads.
constexpr const char* kFinalStatus = "x_tokenmill_final_status";

int64_t now() { return static_cast<int64_t>(std::time(nullptr)); }

// A test hook: with TOKENMILL_TEST_FINALIZE_PAUSE_MS=N, finalize logs each of its steps
// and then sleeps N ms, so that a test can SIGKILL the server inside any of them.
void finalize_step_done(const std::string& id, const char* step) {
  static const int pause_ms = [] {
    const char* value = std::getenv("TOKENMILL_TEST_FINALIZE_PAUSE_MS");
    return value ? std::atoi(value) : 0;
  }();
  if (pause_ms <= 0) return;
  log_warn("batch " + id + " finalize step: " + step);
  std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
}

// The rules a batch's input file is read by: its one endpoint, the models this server has.
BatchFileRules rules_for(const Json& batch, const BatchLimits& limits, const RouteContext& context) {
  BatchFileRules rules;
  rules.urls = {batch["endpoint"].get<std::string>()};
  rules.max_requests = limits.max_requests;
  rules.knows_model = [&context](const std::string& url, const std::string& model) {
    return batch_model_known(context, url, model);
  };
  return rules;
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

// Deletes output files of batch id that an earlier finalize wrote but did not record in
// the batch (the process died in between), so that a finalize run again leaves one of each.
void remove_unrecorded_outputs(state::BatchState& state, const std::string& id) {
  const std::set<std::string> names = {id + "_output.jsonl", id + "_error.jsonl"};
  std::string after;
  while (true) {
    const std::vector<state::FileRecord> page = state.list_files("batch_output", after, 1000, /*newest_first=*/false);
    for (const state::FileRecord& file : page) {
      if (names.count(file.filename)) (void)state.delete_file(file.id);
    }
    if (page.size() < 1000) break;
    after = page.back().id;
  }
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
  std::vector<BatchLine> lines;
  if (!file.ok()) {
    errors.push_back({{"code", "file_not_found"}, {"message", file.status().message()}, {"param", "input_file_id"},
                      {"line", nullptr}});
  } else {
    lines = read_batch_lines(state_.file_path(input), rules_for(batch, limits_, context_), errors);
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
  std::vector<BatchLine> lines;
  if (const auto file = state_.file(batch["input_file_id"].get<std::string>()); file.ok()) {
    lines = read_batch_lines(state_.file_path(file->id), rules_for(batch, limits_, context_), errors);
  }
  const std::set<int64_t> done = state_.lines_done(id);

  // Shared with the answers' callbacks on the strand.
  struct Progress {
    std::mutex mu;
    std::condition_variable cv;
    int in_flight = 0;
    int64_t completed = 0, failed = 0;
    bool write_failed = false;  // a result could not be recorded (a full disk)
    // In flight, with the flag that drops its answer (set when it is cancelled).
    std::map<int64_t, std::pair<std::shared_ptr<CapturedResponse>, std::shared_ptr<std::atomic<bool>>>> running;
  };
  auto progress = std::make_shared<Progress>();
  for (const state::ResultRow& row : state_.results(id)) (row.is_error ? progress->failed : progress->completed)++;

  // A result the disk refused is not counted: its line runs again on a later pass.
  auto record = [this, id, progress](const BatchLine& line, int status, const std::string& body) {
    const bool is_error = status != 200;
    const Status written =
        state_.add_result(id, {line.line, line.custom_id, is_error, dump_json(batch_result_line(line.custom_id, status, body))});
    std::lock_guard lock(progress->mu);
    if (!written.ok()) {
      if (!progress->write_failed) log_error("batch " + id + ": cannot record a result (" + written.message() + ")");
      progress->write_failed = true;
      return;
    }
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
      const BatchLine& line = lines[next++];
      if (done.count(line.line)) continue;
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
      start_batch_request(context_, line.url, line.body, response, engine::Priority::kBatch);
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
  if (progress->write_failed && final_status == "completed") {
    // Lines whose results were lost to a full disk run again on the next pass, after a
    // pause that lets the disk make room.
    if (batch["status"] == "in_progress") save(batch, "in_progress");
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(2), [&] { return stopping_.load(); });
    return;
  }
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
  finalize_step_done(id, "started");
  remove_unrecorded_outputs(state_, id);
  auto output = write_result_file(state_, outputs, id + "_output.jsonl");
  finalize_step_done(id, "output recorded");
  auto error = write_result_file(state_, errors, id + "_error.jsonl");
  if (!output.ok() || !error.ok()) return;  // the disk refused: try again at the next tick
  finalize_step_done(id, "files recorded");
  batch["output_file_id"] = output->empty() ? Json(nullptr) : Json(*output);
  batch["error_file_id"] = error->empty() ? Json(nullptr) : Json(*error);
  batch["status"] = final_status;
  batch[final_status + "_at"] = now();
  batch.erase(kFinalStatus);
  save(batch, "finalizing");
}

}  // namespace tokenmill::server
