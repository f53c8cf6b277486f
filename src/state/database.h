// A SQLite database in WAL mode, with its schema brought up to date by numbered
// migrations, and prepared statements that bind and read columns by position.
//
// Every write a caller is told succeeded has reached the disk (synchronous=FULL): an
// acknowledged upload or a finished request's result survives kill -9 and power loss.
//
// Thread-safety: one Database may be used from many threads; each call holds its mutex
// (SQLite's own serialization is kept simple this way), and transaction() runs its body
// under it too.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace tokenmill::state {

class Statement;

class Database {
 public:
  // Opens (creating) path and applies the migrations it has not seen: migrations[i]
  // brings the schema from version i to i + 1, in one transaction each.
  static Result<std::unique_ptr<Database>> open(const std::string& path, const std::vector<std::string>& migrations);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  int schema_version() const { return schema_version_; }

  // Runs body in one transaction (BEGIN IMMEDIATE ... COMMIT), rolled back when body
  // returns an error. Statements made inside must be used inside.
  Status transaction(const std::function<Status()>& body);
  // One statement with its parameters bound; rows reach on_row (may be empty).
  Status run(const std::string& sql, const std::vector<std::optional<std::string>>& params = {},
             const std::function<void(const Statement&)>& on_row = {});
  // The same, the caller already holding the lock (inside transaction()).
  Status run_locked(const std::string& sql, const std::vector<std::optional<std::string>>& params,
                    const std::function<void(const Statement&)>& on_row);

  int64_t changes() const { return sqlite3_changes64(db_); }

 private:
  Database() = default;
  Status exec(const std::string& sql);  // holds mu_

  sqlite3* db_ = nullptr;
  std::recursive_mutex mu_;
  int schema_version_ = 0;
};

// A row being read: columns by position.
class Statement {
 public:
  explicit Statement(sqlite3_stmt* stmt) : stmt_(stmt) {}
  std::string text(int column) const;
  int64_t integer(int column) const { return sqlite3_column_int64(stmt_, column); }
  bool is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

 private:
  sqlite3_stmt* stmt_;
};

}  // namespace tokenmill::state
