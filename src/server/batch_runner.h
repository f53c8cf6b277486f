// Runs the batches of the Batches API in the background, through the same engines and
// route code as interactive requests, and keeps every step durable (state/batch_state.h):
//
//   validating   the input file is read: one JSON request per line with a unique
//                custom_id, method POST, the batch's endpoint as url, a model the
//                server has; any bad line fails the batch, naming its line
//   in_progress  lines without a result run, at most max_in_flight at once; each
//                finished line is written as its output (or error) row before the next
//                is counted; a request the engine refuses is an error row, the batch
//                goes on
//   finalizing   the output and error files are written from the rows, in line order
//   completed | failed | expired (past expires_at, with the results so far) |
//   cancelling -> cancelled (in-flight requests cancelled, results so far kept)
//
// After a restart every batch resumes in the state it was left in: only lines without a
// row run again, so no line is run twice into the output.
//
// Thread-safety: wake() from any thread; the runner's work happens on its own thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "server/json_fields.h"
#include "server/route_context.h"
#include "server/work_queue.h"
#include "state/batch_state.h"

namespace tokenmill::server {

struct BatchLimits {
  int64_t max_requests = 50000;  // lines per batch file
  int max_in_flight = 64;        // batch requests in the engines at once
};

class BatchRunner {
 public:
  BatchRunner(state::BatchState& state, const RouteContext& context, BatchLimits limits);
  ~BatchRunner();  // stop()s

  // A batch was created or cancelled: look now rather than at the next tick.
  void wake();
  // Stops between requests: in-flight requests are cancelled and their results dropped
  // (they run again after a restart).
  void stop();

  const BatchLimits& limits() const { return limits_; }

 private:
  void run();
  void validate(Json& batch);
  void execute(Json& batch);
  void finalize(Json& batch, const std::string& final_status);
  // Writes the batch if its stored status is still expected; false when a cancel (or
  // anything else) changed it first.
  bool save(const Json& batch, const std::string& expected_status);
  // The batch's status as stored now (a cancel arrives through the database).
  std::string stored_status(const std::string& id) const;

  state::BatchState& state_;
  const RouteContext& context_;
  const BatchLimits limits_;
  WorkQueue strand_{1};  // where the batch requests' answers arrive

  std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// A batch object as the API returns it: the stored one without the runner's own fields.
Json public_batch(Json batch);

}  // namespace tokenmill::server
