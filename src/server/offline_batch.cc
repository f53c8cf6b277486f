#include "server/offline_batch.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "base/line_file.h"
#include "server/batch_lines.h"
#include "server/captured_response.h"

namespace tokenmill::server {

namespace {

// Opens a result file, adding the custom_ids it already holds to done.
Result<LineFile> open_results(const std::string& path, std::set<std::string>& done) {
  std::vector<std::string> lines;
  auto file = LineFile::open(path, &lines);
  if (!file.ok()) return file.status();
  for (const std::string& line : lines) {
    const Json row = Json::parse(line, nullptr, false);
    if (row.is_object() && row.contains("custom_id") && row["custom_id"].is_string()) {
      done.insert(row["custom_id"].get<std::string>());
    }
  }
  return file;
}

std::string describe(const Json& errors) {
  std::string out;
  for (const Json& e : errors) {
    if (!out.empty()) out += "\n";
    if (e["line"].is_number()) out += "line " + std::to_string(e["line"].get<int64_t>()) + ": ";
    out += e["code"].get<std::string>() + ": " + e["message"].get<std::string>();
  }
  return out;
}

}  // namespace

Result<OfflineBatchProgress> run_offline_batch(const RouteContext& context, WorkQueue& strand,
                                               const OfflineBatchConfig& config,
                                               const std::function<void(const OfflineBatchProgress&)>& progress,
                                               const std::atomic<bool>& stop) {
  const auto started = std::chrono::steady_clock::now();
  BatchFileRules rules;
  rules.urls = {"/v1/chat/completions", "/v1/completions"};
  if (context.embeddings != nullptr) rules.urls.push_back("/v1/embeddings");
  rules.max_requests = INT64_MAX;
  rules.knows_model = [](const std::string&, const std::string&) { return true; };  // every line runs on ours
  Json errors = Json::array();
  std::vector<BatchLine> lines = read_batch_lines(config.input, rules, errors);
  if (!errors.empty()) return invalid_argument(config.input + ":\n" + describe(errors));

  std::set<std::string> done;
  auto output = open_results(config.output, done);
  if (!output.ok()) return output.status();
  std::optional<LineFile> error_file;
  if (!config.errors.empty()) {
    auto opened = open_results(config.errors, done);
    if (!opened.ok()) return opened.status();
    error_file.emplace(std::move(opened).value());
  }

  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    int in_flight = 0;
    OfflineBatchProgress counts;
    Status write_error;  // the first write the disk refused; the run stops
    std::map<int64_t, std::shared_ptr<CapturedResponse>> running;
  };
  auto shared = std::make_shared<Shared>();
  shared->counts.total = static_cast<int64_t>(lines.size());
  for (const BatchLine& line : lines) shared->counts.already_done += done.count(line.custom_id);

  LineFile* errors_out = error_file ? &*error_file : &*output;
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  size_t next = 0;
  auto last_report = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  while (true) {
    const bool stopping = stop.load() || !shared->write_error.ok();
    if (stopping) {
      cancelled->store(true);
      std::vector<std::shared_ptr<CapturedResponse>> running;
      {
        std::lock_guard lock(shared->mu);
        for (auto& [line, response] : shared->running) running.push_back(response);
      }
      for (auto& response : running) response->cancel();
    }
    while (!stopping && next < lines.size()) {
      {
        std::lock_guard lock(shared->mu);
        if (shared->in_flight >= config.max_in_flight) break;
      }
      const BatchLine& line = lines[next++];
      if (done.count(line.custom_id)) continue;
      auto finished = [shared, cancelled, &line, &output, errors_out](int status, std::string body) {
        Status written;
        if (!cancelled->load()) {
          const std::string row = dump_json(batch_result_line(line.custom_id, status, body));
          written = (status == 200 ? *output : *errors_out).append(row);
        }
        std::lock_guard lock(shared->mu);
        if (!cancelled->load()) {
          if (!written.ok()) {
            if (shared->write_error.ok()) shared->write_error = written;
          } else {
            (status == 200 ? shared->counts.completed : shared->counts.failed)++;
          }
        }
        shared->running.erase(line.line);
        --shared->in_flight;
        shared->cv.notify_all();
      };
      auto response = std::make_shared<CapturedResponse>(strand, finished);
      {
        std::lock_guard lock(shared->mu);
        ++shared->in_flight;
        shared->running[line.line] = response;
      }
      Json body = line.body;
      body["model"] = line.url == "/v1/embeddings" ? context.embeddings->name : config.model;
      start_batch_request(context, line.url, body, response, engine::Priority::kBatch);
    }
    std::unique_lock lock(shared->mu);
    if ((stopping || next >= lines.size()) && shared->in_flight == 0) break;
    shared->cv.wait_for(lock, std::chrono::milliseconds(50));
    if (progress && std::chrono::steady_clock::now() - last_report >= std::chrono::milliseconds(200)) {
      last_report = std::chrono::steady_clock::now();
      OfflineBatchProgress now = shared->counts;
      lock.unlock();
      now.seconds = elapsed();
      progress(now);
    }
  }
  Status synced = output->sync();
  if (error_file && synced.ok()) synced = error_file->sync();
  OfflineBatchProgress result;
  {
    std::lock_guard lock(shared->mu);
    if (!shared->write_error.ok()) return shared->write_error;
    result = shared->counts;
  }
  if (!synced.ok()) return synced;
  result.seconds = elapsed();
  return result;
}

}  // namespace tokenmill::server
