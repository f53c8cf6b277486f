// OpenAI's Files API (POST/GET /v1/files, GET/DELETE /v1/files/{id}, GET
// /v1/files/{id}/content) and Batches API (POST/GET /v1/batches, GET /v1/batches/{id},
// POST /v1/batches/{id}/cancel), over state/batch_state.h; the batches themselves run in
// server/batch_runner.h.
#include <cstdio>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/mapped_file.h"
#include "server/api_error.h"
#include "server/api_lists.h"
#include "server/batch_lines.h"
#include "server/batch_runner.h"
#include "server/multipart.h"
#include "server/query_string.h"
#include "server/route_context.h"

namespace tokenmill::server {

namespace {

// The data directory's disk (or its quota) is full: nothing was stored.
ApiError disk_full() {
  return ApiError{507, "The server could not store the file: its data directory's disk is full", "server_error",
                  "", "insufficient_storage"};
}

constexpr int64_t kWindowSeconds = 24 * 3600;
const char* const kPurposes[] = {"batch", "batch_output", "user_data", "fine-tune", "assistants", "vision", "evals"};

Json file_json(const state::FileRecord& f) {
  return {{"id", f.id},         {"object", "file"},       {"bytes", f.bytes},
          {"created_at", f.created_at}, {"expires_at", nullptr}, {"filename", f.filename},
          {"purpose", f.purpose},       {"status", "processed"}, {"status_details", nullptr}};
}

state::BatchState& batch_state(const RouteContext& context) {
  if (context.batch_state == nullptr) {
    throw ApiError{404, "The Files and Batches APIs are off on this server", "invalid_request_error", "", ""};
  }
  return *context.batch_state;
}

std::string query_param(const std::string& query, const std::string& key) {
  return query_value(parse_query(query), key);
}

int64_t query_limit(const std::string& query, int64_t fallback, int64_t max) {
  return limit_param(parse_query(query), fallback, max);
}

// Every line of a batch input must be a JSON object with a custom_id: checked at upload
// so that a bad file is a 400 naming its line, not a batch that fails later.
void check_batch_lines(std::string_view data) {
  if (data.empty()) throw bad_request("The file is empty", "file");
  int64_t line_no = 0;
  size_t at = 0;
  while (at < data.size()) {
    size_t end = data.find('\n', at);
    if (end == std::string_view::npos) end = data.size();
    std::string_view line = data.substr(at, end - at);
    at = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    const Json request = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!request.is_object()) {
      throw bad_request("Line " + std::to_string(line_no) + " of the file is not a JSON object (or not valid UTF-8)",
                        "file", "invalid_file_format");
    }
    if (!request.contains("custom_id") || !request["custom_id"].is_string()) {
      throw bad_request("Line " + std::to_string(line_no) + " has no 'custom_id' string", "file", "invalid_file_format");
    }
  }
}

// Checks and stores an upload; returns the file object to answer with.
Json store_upload(const RouteContext& context, const HttpRequest& request) {
  state::BatchState& state = batch_state(context);
  // A large upload arrives spooled to a file (HttpLimits::upload_spool_dir): it is read
  // through a mapping, so its bytes live in the page cache, not on this process's heap.
  MappedFile spooled;
  std::string_view body = request.body;
  if (request.body_file) {
    auto mapped = MappedFile::open(request.body_file->path());
    if (!mapped.ok()) throw server_error("cannot read the spooled upload: " + mapped.status().message());
    spooled = std::move(mapped).value();
    body = std::string_view(reinterpret_cast<const char*>(spooled.data()), spooled.size());
  }
  auto parts = parse_multipart(request.header("content-type"), body);
  if (!parts.ok()) throw bad_request(parts.status().message(), "file");
  const FormPart* file = nullptr;
  std::string purpose;
  for (const FormPart& part : *parts) {
    if (part.name == "file") file = &part;
    if (part.name == "purpose") purpose = std::string(part.data);
  }
  if (file == nullptr) throw bad_request("The 'file' field is required", "file");
  if (std::find(std::begin(kPurposes), std::end(kPurposes), purpose) == std::end(kPurposes)) {
    throw bad_request("'purpose' must be one of batch, batch_output, user_data, ...; found '" + purpose + "'",
                      "purpose");
  }
  if (purpose == "batch") check_batch_lines(file->data);
  const std::string temp = state.temp_path();
  {
    std::FILE* f = std::fopen(temp.c_str(), "wb");
    if (f == nullptr) throw server_error("cannot store the upload");
    const bool written = std::fwrite(file->data.data(), 1, file->data.size(), f) == file->data.size() &&
                         std::fflush(f) == 0 && ::fsync(fileno(f)) == 0;
    std::fclose(f);
    if (!written) {
      ::unlink(temp.c_str());
      throw disk_full();
    }
  }
  auto record = state.add_file(temp, purpose, file->filename.empty() ? "upload" : file->filename);
  if (!record.ok()) {
    ::unlink(temp.c_str());
    throw state_error(record.status());
  }
  return file_json(*record);
}

void create_batch(const RouteContext& context, const HttpRequest& request, const std::shared_ptr<Responder>& out) {
  state::BatchState& state = batch_state(context);
  const Json body = parse_json_object(request.body);
  Fields f(body);
  const auto input = f.string("input_file_id");
  const auto endpoint = f.string("endpoint");
  const auto window = f.string("completion_window");
  if (!input) throw bad_request("'input_file_id' is required", "input_file_id");
  if (!endpoint) throw bad_request("'endpoint' is required", "endpoint");
  if (!is_batch_endpoint(*endpoint)) {
    throw bad_request("'endpoint' must be /v1/chat/completions, /v1/completions or /v1/embeddings", "endpoint");
  }
  if (*endpoint == "/v1/embeddings" && context.embeddings == nullptr) {
    throw bad_request("This server has no embedding model for /v1/embeddings batches: start tokenmill serve with "
                      "--embedding-model FILE.gguf", "endpoint");
  }
  if (window.value_or("") != "24h") throw bad_request("'completion_window' must be \"24h\"", "completion_window");
  Json metadata = nullptr;
  if (const Json* m = f.object("metadata")) {
    check_metadata(*m);
    metadata = *m;
  }
  const auto file = state.file(*input);
  if (!file.ok()) throw state_error(file.status());
  if (file->purpose != "batch") throw bad_request("The input file's purpose must be 'batch'", "input_file_id");
  const int64_t created = static_cast<int64_t>(std::time(nullptr));
  Json batch = {{"id", state::new_state_id("batch_")},
                {"object", "batch"},
                {"endpoint", *endpoint},
                {"errors", nullptr},
                {"input_file_id", *input},
                {"completion_window", "24h"},
                {"status", "validating"},
                {"output_file_id", nullptr},
                {"error_file_id", nullptr},
                {"created_at", created},
                {"in_progress_at", nullptr},
                {"expires_at", created + kWindowSeconds},
                {"finalizing_at", nullptr},
                {"completed_at", nullptr},
                {"failed_at", nullptr},
                {"expired_at", nullptr},
                {"cancelling_at", nullptr},
                {"cancelled_at", nullptr},
                {"request_counts", {{"total", 0}, {"completed", 0}, {"failed", 0}}},
                {"metadata", metadata}};
  Status s = state.put_batch({batch["id"], "validating", batch.dump(), created});
  if (!s.ok()) throw state_error(s);
  if (context.wake_batches) context.wake_batches();
  out->send(200, "application/json", dump_json(batch));
}

Json load_batch(state::BatchState& state, const std::string& id) {
  auto row = state.batch(id);
  if (!row.ok()) throw state_error(row.status());
  Json batch = Json::parse(row->object);
  batch["status"] = row->status;
  return batch;
}

}  // namespace

void add_batch_routes(Router& router, const RouteContext& context) {
  router.add("POST", "/v1/files", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    // Parsing, checking (every line of a batch file) and storing up to 200 MB takes a
    // while: it runs on a preparation thread, not on the I/O thread other clients share.
    auto upload = std::make_shared<const HttpRequest>(request);
    prepare_then(context, request.path, out, [&context, upload, out]() -> std::function<void()> {
      std::string answer = dump_json(store_upload(context, *upload));
      return [out, answer = std::move(answer)] { out->send(200, "application/json", answer); };
    });
  });
  router.add("GET", "/v1/files", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    state::BatchState& state = batch_state(context);
    const int64_t limit = query_limit(request.query, 10000, 10000);
    const bool newest_first = query_param(request.query, "order") != "asc";
    const auto files = state.list_files(query_param(request.query, "purpose"), query_param(request.query, "after"),
                                        limit + 1, newest_first);
    Json data = Json::array();
    for (size_t i = 0; i < files.size() && static_cast<int64_t>(i) < limit; ++i) data.push_back(file_json(files[i]));
    out->send(200, "application/json", dump_json(list_page(data, static_cast<int64_t>(files.size()) > limit)));
  });
  router.add_prefix("GET", "/v1/files/", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    state::BatchState& state = batch_state(context);
    std::string id = request.path.substr(std::string("/v1/files/").size());
    const bool content = id.ends_with("/content");
    if (content) id.resize(id.size() - std::string("/content").size());
    const auto file = state.file(id);
    if (!file.ok()) throw state_error(file.status());
    if (!content) {
      out->send(200, "application/json", dump_json(file_json(*file)));
      return;
    }
    // Sent a piece at a time as the client reads: a 200 MB file is never in memory.
    const int fd = ::open(state.file_path(id).c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
      if (fd >= 0) ::close(fd);
      throw server_error("the contents of " + id + " cannot be read");
    }
    out->send_file(200, "application/octet-stream", fd, static_cast<int64_t>(st.st_size));
  });
  router.add_prefix("DELETE", "/v1/files/", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    state::BatchState& state = batch_state(context);
    const std::string id = request.path.substr(std::string("/v1/files/").size());
    if (Status s = state.delete_file(id); !s.ok()) throw state_error(s);
    out->send(200, "application/json", dump_json(Json{{"id", id}, {"object", "file"}, {"deleted", true}}));
  });
  router.add("POST", "/v1/batches", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    create_batch(context, request, out);
  });
  router.add("GET", "/v1/batches", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    state::BatchState& state = batch_state(context);
    const int64_t limit = query_limit(request.query, 20, 100);
    const auto rows = state.list_batches(query_param(request.query, "after"), limit + 1);
    Json data = Json::array();
    for (size_t i = 0; i < rows.size() && static_cast<int64_t>(i) < limit; ++i) {
      Json batch = Json::parse(rows[i].object);
      batch["status"] = rows[i].status;
      data.push_back(public_batch(batch));
    }
    out->send(200, "application/json", dump_json(list_page(data, static_cast<int64_t>(rows.size()) > limit)));
  });
  router.add_prefix("GET", "/v1/batches/", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    const std::string id = request.path.substr(std::string("/v1/batches/").size());
    out->send(200, "application/json", dump_json(public_batch(load_batch(batch_state(context), id))));
  });
  router.add_prefix("POST", "/v1/batches/", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    state::BatchState& state = batch_state(context);
    std::string id = request.path.substr(std::string("/v1/batches/").size());
    if (!id.ends_with("/cancel")) throw ApiError{404, "Unknown route " + request.path, "invalid_request_error", "", ""};
    id.resize(id.size() - std::string("/cancel").size());
    Json batch = load_batch(state, id);
    const std::string status = batch["status"];
    if (status == "validating" || status == "in_progress") {
      batch["status"] = "cancelling";
      batch["cancelling_at"] = static_cast<int64_t>(std::time(nullptr));
      auto updated = state.update_batch({id, "cancelling", batch.dump(), batch["created_at"].get<int64_t>()}, status);
      if (!updated.ok()) throw state_error(updated.status());
      if (!*updated) {  // the runner moved it on meanwhile
        batch = load_batch(state, id);
        if (batch["status"] != "cancelling") {
          throw ApiError{409, "Cannot cancel a batch with status '" + batch["status"].get<std::string>() + "'",
                         "invalid_request_error", "", ""};
        }
      }
      if (context.wake_batches) context.wake_batches();
    } else if (status != "cancelling" && status != "cancelled") {
      throw ApiError{409, "Cannot cancel a batch with status '" + status + "'", "invalid_request_error", "", ""};
    }
    out->send(200, "application/json", dump_json(public_batch(batch)));
  });
}

}  // namespace tokenmill::server
