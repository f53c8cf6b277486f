#include "state/batch_state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <random>

#include "base/data_dir.h"
#include "base/durable_file.h"

namespace tokenmill::state {

namespace fs = std::filesystem;

namespace {

// Each entry brings the schema one version up; never edit one that has shipped.
const std::vector<std::string> kMigrations = {
    // 1: files, batches, results.
    "CREATE TABLE files (id TEXT PRIMARY KEY, purpose TEXT NOT NULL, filename TEXT NOT NULL,"
    "  bytes INTEGER NOT NULL, created_at INTEGER NOT NULL);"
    "CREATE INDEX files_by_time ON files (created_at, id);"
    "CREATE TABLE batches (id TEXT PRIMARY KEY, status TEXT NOT NULL, object TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL);"
    "CREATE INDEX batches_by_time ON batches (created_at, id);"
    "CREATE TABLE batch_results (batch_id TEXT NOT NULL, line INTEGER NOT NULL, custom_id TEXT NOT NULL,"
    "  is_error INTEGER NOT NULL, json TEXT NOT NULL, PRIMARY KEY (batch_id, line));",
    // 2: stored chat completions.
    "CREATE TABLE stored_completions (id TEXT PRIMARY KEY, model TEXT NOT NULL, created_at INTEGER NOT NULL,"
    "  metadata TEXT NOT NULL, request TEXT NOT NULL, response TEXT NOT NULL);"
    "CREATE INDEX stored_completions_by_time ON stored_completions (created_at, id);",
};

StoredCompletion completion_from(const Statement& row) {
  return {row.text(0), row.text(1), row.integer(2), row.text(3), row.text(4), row.text(5)};
}

// A JSON path naming one top-level key, whatever characters it holds.
std::string json_key_path(const std::string& key) {
  std::string out = "$.\"";
  for (char c : key) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

FileRecord file_from(const Statement& row) {
  return {row.text(0), row.text(1), row.text(2), row.integer(3), row.integer(4)};
}

BatchRow batch_from(const Statement& row) { return {row.text(0), row.text(1), row.text(2), row.integer(3)}; }

}  // namespace

std::string new_state_id(const std::string& prefix) {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^ static_cast<uint64_t>(::getpid()));
  static const char kHex[] = "0123456789abcdef";
  std::string out = prefix;
  for (int i = 0; i < 24; ++i) out += kHex[rng() & 15];
  return out;
}

std::string BatchState::default_dir() { return user_data_dir(); }

Result<std::unique_ptr<BatchState>> BatchState::open(const std::string& data_dir) {
  std::error_code ec;
  fs::create_directories(fs::path(data_dir) / "files", ec);
  if (ec) return io_error("cannot create the data directory " + data_dir + ": " + ec.message());
  std::unique_ptr<BatchState> state(new BatchState());
  const std::string lock = (fs::path(data_dir) / "lock").string();
  state->lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (state->lock_fd_ < 0) return io_error("cannot open " + lock);
  if (::flock(state->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return resource_exhausted("the data directory " + data_dir + " is in use by another tokenmill process");
  }
  auto db = Database::open((fs::path(data_dir) / "state.db").string(), kMigrations);
  if (!db.ok()) return db.status();
  // Holding the lock, no other process writes here: what is still incoming is left over.
  for (const auto& entry : fs::directory_iterator(fs::path(data_dir) / "files", ec)) {
    if (entry.path().filename().string().starts_with(".incoming-")) fs::remove(entry.path(), ec);
  }
  state->dir_ = data_dir;
  state->db_ = std::move(db).value();
  return state;
}

Result<std::unique_ptr<BatchState>> BatchState::open_for_reading(const std::string& data_dir) {
  const std::string path = (fs::path(data_dir) / "state.db").string();
  std::error_code ec;
  if (!fs::exists(path, ec)) return not_found("no stored state in " + data_dir + " (no state.db)");
  auto db = Database::open(path, kMigrations);
  if (!db.ok()) return db.status();
  std::unique_ptr<BatchState> state(new BatchState());
  state->dir_ = data_dir;
  state->db_ = std::move(db).value();
  return state;
}

BatchState::~BatchState() {
  db_.reset();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::string BatchState::file_path(const std::string& id) const { return (fs::path(dir_) / "files" / id).string(); }

std::string BatchState::incoming_dir() const { return (fs::path(dir_) / "files").string(); }

std::string BatchState::temp_path() const {
  static std::atomic<uint64_t> counter{0};
  return (fs::path(dir_) / "files" / (".incoming-" + std::to_string(::getpid()) + "-" + std::to_string(counter++)))
      .string();
}

Result<FileRecord> BatchState::add_file(const std::string& temp_path, const std::string& purpose,
                                        const std::string& filename) {
  FileRecord record;
  record.id = new_state_id("file-");
  record.purpose = purpose;
  record.filename = filename;
  std::error_code ec;
  record.bytes = static_cast<int64_t>(fs::file_size(temp_path, ec));
  if (ec) return io_error("cannot read " + temp_path + ": " + ec.message());
  record.created_at = static_cast<int64_t>(std::time(nullptr));
  if (Status s = rename_durably(temp_path, file_path(record.id)); !s.ok()) return s;
  Status s = db_->run("INSERT INTO files (id, purpose, filename, bytes, created_at) VALUES (?, ?, ?, ?, ?)",
                      {record.id, record.purpose, record.filename, std::to_string(record.bytes),
                       std::to_string(record.created_at)});
  if (!s.ok()) {
    ::unlink(file_path(record.id).c_str());
    return s;
  }
  return record;
}

Result<FileRecord> BatchState::file(const std::string& id) const {
  std::optional<FileRecord> found;
  Status s = db_->run("SELECT id, purpose, filename, bytes, created_at FROM files WHERE id = ?", {id},
                      [&](const Statement& row) { found = file_from(row); });
  if (!s.ok()) return s;
  if (!found) return not_found("No such File object: " + id);
  return *found;
}

std::vector<FileRecord> BatchState::list_files(const std::string& purpose, const std::string& after, int64_t limit,
                                               bool newest_first) const {
  std::vector<FileRecord> out;
  std::string sql = "SELECT id, purpose, filename, bytes, created_at FROM files WHERE (? IS NULL OR purpose = ?)";
  std::vector<std::optional<std::string>> params = {purpose.empty() ? std::nullopt : std::optional(purpose),
                                                    purpose.empty() ? std::nullopt : std::optional(purpose)};
  if (!after.empty()) {
    sql += newest_first ? " AND rowid < (SELECT rowid FROM files WHERE id = ?)"
                        : " AND rowid > (SELECT rowid FROM files WHERE id = ?)";
    params.push_back(after);
  }
  sql += newest_first ? " ORDER BY rowid DESC" : " ORDER BY rowid";
  sql += " LIMIT ?";
  params.push_back(std::to_string(limit));
  (void)db_->run(sql, params, [&](const Statement& row) { out.push_back(file_from(row)); });
  return out;
}

Status BatchState::delete_file(const std::string& id) {
  if (auto f = file(id); !f.ok()) return f.status();
  // The contents go first: on a full disk the row's deletion needs the room they free.
  // Should the row stay (the database refused), a second delete removes it.
  ::unlink(file_path(id).c_str());
  return db_->run("DELETE FROM files WHERE id = ?", {id});
}

Status BatchState::put_batch(const BatchRow& row) {
  return db_->run("INSERT OR REPLACE INTO batches (id, status, object, created_at) VALUES (?, ?, ?, ?)",
                  {row.id, row.status, row.object, std::to_string(row.created_at)});
}

Result<bool> BatchState::update_batch(const BatchRow& row, const std::string& expected_status) {
  bool updated = false;
  Status s = db_->transaction([&]() -> Status {
    Status u = db_->run_locked("UPDATE batches SET status = ?, object = ? WHERE id = ? AND status = ?",
                               {row.status, row.object, row.id, expected_status}, {});
    updated = db_->changes() > 0;
    return u;
  });
  if (!s.ok()) return s;
  return updated;
}

Result<BatchRow> BatchState::batch(const std::string& id) const {
  std::optional<BatchRow> found;
  Status s = db_->run("SELECT id, status, object, created_at FROM batches WHERE id = ?", {id},
                      [&](const Statement& row) { found = batch_from(row); });
  if (!s.ok()) return s;
  if (!found) return not_found("No batch found with id '" + id + "'");
  return *found;
}

std::vector<BatchRow> BatchState::list_batches(const std::string& after, int64_t limit) const {
  std::vector<BatchRow> out;
  std::string sql = "SELECT id, status, object, created_at FROM batches";
  std::vector<std::optional<std::string>> params;
  if (!after.empty()) {
    sql += " WHERE rowid < (SELECT rowid FROM batches WHERE id = ?)";
    params.push_back(after);
  }
  sql += " ORDER BY rowid DESC LIMIT ?";
  params.push_back(std::to_string(limit));
  (void)db_->run(sql, params, [&](const Statement& row) { out.push_back(batch_from(row)); });
  return out;
}

std::vector<BatchRow> BatchState::batches_with_status(const std::vector<std::string>& statuses) const {
  std::vector<BatchRow> out;
  for (const std::string& status : statuses) {
    (void)db_->run("SELECT id, status, object, created_at FROM batches WHERE status = ? ORDER BY rowid",
                   {status}, [&](const Statement& row) { out.push_back(batch_from(row)); });
  }
  return out;
}

Status BatchState::add_result(const std::string& batch_id, const ResultRow& row) {
  return db_->run("INSERT OR IGNORE INTO batch_results (batch_id, line, custom_id, is_error, json) VALUES (?, ?, ?, ?, ?)",
                  {batch_id, std::to_string(row.line), row.custom_id, row.is_error ? "1" : "0", row.json});
}

std::set<int64_t> BatchState::lines_done(const std::string& batch_id) const {
  std::set<int64_t> out;
  (void)db_->run("SELECT line FROM batch_results WHERE batch_id = ?", {batch_id},
                 [&](const Statement& row) { out.insert(row.integer(0)); });
  return out;
}

std::vector<ResultRow> BatchState::results(const std::string& batch_id) const {
  std::vector<ResultRow> out;
  (void)db_->run("SELECT line, custom_id, is_error, json FROM batch_results WHERE batch_id = ? ORDER BY line",
                 {batch_id}, [&](const Statement& row) {
                   out.push_back({row.integer(0), row.text(1), row.integer(2) != 0, row.text(3)});
                 });
  return out;
}

Status BatchState::delete_results(const std::string& batch_id) {
  return db_->run("DELETE FROM batch_results WHERE batch_id = ?", {batch_id});
}

Status BatchState::put_completion(const StoredCompletion& c) {
  return db_->run("INSERT OR REPLACE INTO stored_completions (id, model, created_at, metadata, request, response) "
                  "VALUES (?, ?, ?, ?, ?, ?)",
                  {c.id, c.model, std::to_string(c.created_at), c.metadata, c.request, c.response});
}

Result<StoredCompletion> BatchState::completion(const std::string& id) const {
  std::optional<StoredCompletion> found;
  Status s = db_->run("SELECT id, model, created_at, metadata, request, response FROM stored_completions WHERE id = ?",
                      {id}, [&](const Statement& row) { found = completion_from(row); });
  if (!s.ok()) return s;
  if (!found) return not_found("No chat completion found with id '" + id + "'");
  return *found;
}

std::vector<StoredCompletion> BatchState::list_completions(
    const std::string& model, const std::vector<std::pair<std::string, std::string>>& metadata,
    const std::string& after, int64_t limit, bool newest_first) const {
  std::string sql = "SELECT id, model, created_at, metadata, request, response FROM stored_completions WHERE 1";
  std::vector<std::optional<std::string>> params;
  if (!model.empty()) {
    sql += " AND model = ?";
    params.push_back(model);
  }
  for (const auto& [key, value] : metadata) {
    sql += " AND json_extract(metadata, ?) = ?";
    params.push_back(json_key_path(key));
    params.push_back(value);
  }
  if (!after.empty()) {
    sql += newest_first ? " AND rowid < (SELECT rowid FROM stored_completions WHERE id = ?)"
                        : " AND rowid > (SELECT rowid FROM stored_completions WHERE id = ?)";
    params.push_back(after);
  }
  sql += newest_first ? " ORDER BY rowid DESC" : " ORDER BY rowid";
  sql += " LIMIT ?";
  params.push_back(std::to_string(limit));
  std::vector<StoredCompletion> out;
  (void)db_->run(sql, params, [&](const Statement& row) { out.push_back(completion_from(row)); });
  return out;
}

Status BatchState::update_completion_metadata(const std::string& id, const std::string& metadata) {
  if (auto c = completion(id); !c.ok()) return c.status();
  return db_->run("UPDATE stored_completions SET metadata = ? WHERE id = ?", {metadata, id});
}

Status BatchState::delete_completion(const std::string& id) {
  if (auto c = completion(id); !c.ok()) return c.status();
  return db_->run("DELETE FROM stored_completions WHERE id = ?", {id});
}

}  // namespace tokenmill::state
