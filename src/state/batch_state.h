// What the Files and Batches APIs keep under --data-dir: SQLite (state.db, WAL) for the
// metadata, and file contents beside it.
//
//   DIR/state.db              files, batches (each batch's API object as JSON, its status
//                             and creation time as columns), and one row per finished
//                             batch request (its output or error line)
//   DIR/files/<file id>       an uploaded or produced file's bytes, written to a
//                             temporary name, fsynced and renamed before its row exists
//
// A request's result row is written once (line number as key): after a crash, a batch
// resumes with the lines that have none, so no line is run twice into its output.
//
// Thread-safety: every method may run on any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "state/database.h"

namespace tokenmill::state {

struct FileRecord {
  std::string id;  // "file-<hex>"
  std::string purpose;
  std::string filename;
  int64_t bytes = 0;
  int64_t created_at = 0;
};

struct BatchRow {
  std::string id;      // "batch_<hex>"
  std::string status;  // validating, in_progress, finalizing, completed, failed, expired, cancelling, cancelled
  std::string object;  // the batch object as the API returns it (JSON)
  int64_t created_at = 0;
};

// A stored chat completion (OpenAI's store: true): the request and the answer.
struct StoredCompletion {
  std::string id;  // the chat.completion's id
  std::string model;
  int64_t created_at = 0;
  std::string metadata;  // JSON object
  std::string request;   // the request body (JSON)
  std::string response;  // the chat.completion (JSON)
};

struct ResultRow {
  int64_t line = 0;  // 1-based line of the input file
  std::string custom_id;
  bool is_error = false;
  std::string json;  // the output (or error) file's line, without the newline
};

class BatchState {
 public:
  // Creates DIR (and DIR/files) when missing. One process at a time holds a data
  // directory (an exclusive lock on DIR/lock): ResourceExhausted when another does.
  static Result<std::unique_ptr<BatchState>> open(const std::string& data_dir);
  // For reading beside the process that holds DIR (tokenmill distill while a server
  // runs): takes no lock and creates nothing; NotFound when DIR has no state. Only the
  // reading methods may be called.
  static Result<std::unique_ptr<BatchState>> open_for_reading(const std::string& data_dir);
  ~BatchState();
  // $XDG_DATA_HOME/tokenmill, else ~/.local/share/tokenmill.
  static std::string default_dir();

  const std::string& dir() const { return dir_; }
  std::string file_path(const std::string& id) const;

  // Files. add_file moves temp_path (written in DIR/files/, complete, fsynced) to its id.
  Result<FileRecord> add_file(const std::string& temp_path, const std::string& purpose, const std::string& filename);
  // A new temporary path in DIR/files/ for an upload or an output being written.
  std::string temp_path() const;
  // DIR/files/: where files are written before they are added. Every name there that
  // starts with ".incoming-" is a file being written, and open() removes those left
  // behind by a process that died.
  std::string incoming_dir() const;
  Result<FileRecord> file(const std::string& id) const;
  // Newest first (order "desc") or oldest first, after the file with id `after` ("": from
  // the start), at most limit (+1 to tell whether there are more).
  std::vector<FileRecord> list_files(const std::string& purpose, const std::string& after, int64_t limit,
                                     bool newest_first) const;
  // NotFound when absent.
  Status delete_file(const std::string& id);

  // Batches.
  Status put_batch(const BatchRow& row);  // insert or replace
  // Replaces the row only while its stored status is still expected: false (nothing
  // written) when another writer (a cancel, the runner) changed it first.
  Result<bool> update_batch(const BatchRow& row, const std::string& expected_status);
  Result<BatchRow> batch(const std::string& id) const;
  std::vector<BatchRow> list_batches(const std::string& after, int64_t limit) const;
  // Batches in any of the statuses, oldest first.
  std::vector<BatchRow> batches_with_status(const std::vector<std::string>& statuses) const;

  // Results: inserted once per (batch, line); a second insert of a line is ignored.
  Status add_result(const std::string& batch_id, const ResultRow& row);
  std::set<int64_t> lines_done(const std::string& batch_id) const;
  std::vector<ResultRow> results(const std::string& batch_id) const;  // by line
  Status delete_results(const std::string& batch_id);

  // Stored completions.
  Status put_completion(const StoredCompletion& completion);
  Result<StoredCompletion> completion(const std::string& id) const;
  // model "" and no metadata filters: all; newest first or oldest first; after an id.
  std::vector<StoredCompletion> list_completions(const std::string& model,
                                                 const std::vector<std::pair<std::string, std::string>>& metadata,
                                                 const std::string& after, int64_t limit, bool newest_first) const;
  // NotFound when absent.
  Status update_completion_metadata(const std::string& id, const std::string& metadata);
  Status delete_completion(const std::string& id);

 private:
  BatchState() = default;

  std::string dir_;
  int lock_fd_ = -1;
  std::unique_ptr<Database> db_;
};

// A fresh id: prefix + 24 random hex digits.
std::string new_state_id(const std::string& prefix);

}  // namespace tokenmill::state
