#include "state/database.h"

namespace tokenmill::state {

namespace {

// A full disk is ResourceExhausted (the caller can say so: HTTP 507), any other failure
// an I/O error.
Status sqlite_error(sqlite3* db, const std::string& what) {
  const std::string message = what + ": " + (db != nullptr ? sqlite3_errmsg(db) : "out of memory");
  if (db != nullptr && (sqlite3_errcode(db) & 0xFF) == SQLITE_FULL) return resource_exhausted(message);
  return io_error(message);
}

}  // namespace

std::string Statement::text(int column) const {
  const unsigned char* p = sqlite3_column_text(stmt_, column);
  const int n = sqlite3_column_bytes(stmt_, column);
  return p == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
}

Result<std::unique_ptr<Database>> Database::open(const std::string& path, const std::vector<std::string>& migrations) {
  std::unique_ptr<Database> db(new Database());
  if (sqlite3_open_v2(path.c_str(), &db->db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    return sqlite_error(db->db_, "cannot open the database " + path);
  }
  sqlite3_busy_timeout(db->db_, 10000);  // another process (tokenmill batch) may hold it briefly
  std::lock_guard lock(db->mu_);
  // The write-ahead log is checkpointed every 256 pages (1 MiB, not SQLite's 4 MiB) and
  // cut back to 1 MiB after a checkpoint, so that it never fills a small data disk alone.
  for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", "PRAGMA foreign_keys=ON",
                             "PRAGMA wal_autocheckpoint=256", "PRAGMA journal_size_limit=1048576"}) {
    if (Status s = db->exec(pragma); !s.ok()) return s;
  }
  if (Status s = db->exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"); !s.ok()) return s;
  int version = -1;
  Status read = db->run_locked("SELECT version FROM schema_version", {},
                               [&](const Statement& row) { version = static_cast<int>(row.integer(0)); });
  if (!read.ok()) return read;
  if (version < 0) {
    if (Status s = db->exec("INSERT INTO schema_version (version) VALUES (0)"); !s.ok()) return s;
    version = 0;
  }
  if (version > static_cast<int>(migrations.size())) {
    return unsupported("the database " + path + " has schema version " + std::to_string(version) +
                       ", newer than this tokenmill knows (" + std::to_string(migrations.size()) + ")");
  }
  for (size_t v = static_cast<size_t>(version); v < migrations.size(); ++v) {
    Status s = db->transaction([&]() -> Status {
      if (Status e = db->exec(migrations[v]); !e.ok()) return e;
      return db->run_locked("UPDATE schema_version SET version = ?", {std::to_string(v + 1)}, {});
    });
    if (!s.ok()) return io_error("migrating " + path + " to schema version " + std::to_string(v + 1) + ": " + s.message());
  }
  db->schema_version_ = static_cast<int>(migrations.size());
  return db;
}

Database::~Database() {
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

Status Database::exec(const std::string& sql) {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    sqlite3_free(message);
    return sqlite_error(db_, "SQLite");
  }
  return {};
}

Status Database::transaction(const std::function<Status()>& body) {
  std::lock_guard lock(mu_);
  if (Status s = exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  Status s = body();
  if (!s.ok()) {
    (void)exec("ROLLBACK");
    return s;
  }
  if (Status c = exec("COMMIT"); !c.ok()) {
    (void)exec("ROLLBACK");
    return c;
  }
  return {};
}

Status Database::run(const std::string& sql, const std::vector<std::optional<std::string>>& params,
                     const std::function<void(const Statement&)>& on_row) {
  std::lock_guard lock(mu_);
  return run_locked(sql, params, on_row);
}

Status Database::run_locked(const std::string& sql, const std::vector<std::optional<std::string>>& params,
                            const std::function<void(const Statement&)>& on_row) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &stmt, nullptr) != SQLITE_OK) {
    return sqlite_error(db_, "SQLite cannot prepare '" + sql + "'");
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const int index = static_cast<int>(i) + 1;
    if (params[i]) {
      sqlite3_bind_text(stmt, index, params[i]->data(), static_cast<int>(params[i]->size()), SQLITE_TRANSIENT);
    } else {
      sqlite3_bind_null(stmt, index);
    }
  }
  Statement row(stmt);
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    if (on_row) on_row(row);
  }
  Status out;
  if (rc != SQLITE_DONE) out = sqlite_error(db_, "SQLite");
  sqlite3_finalize(stmt);
  return out;
}

}  // namespace tokenmill::state
