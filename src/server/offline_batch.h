// The offline batch (`tokenmill batch`): a whole file in OpenAI's batch format through
// the same route code and engine as the server's requests, with no server. Result lines
// are appended to the output file as they finish (failed ones to the error file when
// there is one), so a run that is killed and started again runs only the custom_ids
// missing from those files: each appears there exactly once.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"
#include "server/route_context.h"
#include "server/work_queue.h"

namespace tokenmill::server {

struct OfflineBatchConfig {
  std::string input;
  std::string output;
  std::string errors;  // "": failed lines go to the output file too
  int max_in_flight = 64;
  // Every chat and completion line runs on this model, whatever its "model" field says
  // (a file written for another provider's model runs as it is).
  std::string model;
};

struct OfflineBatchProgress {
  int64_t total = 0;         // requests in the input file
  int64_t already_done = 0;  // found in the output files at the start
  int64_t completed = 0;     // finished with status 200 in this run
  int64_t failed = 0;        // finished with an error in this run
  double seconds = 0;        // since this run started
};

// Runs config.input; answers arrive, and are written, on strand (a WorkQueue of one
// thread that outlives the engine: see captured_response.h). progress (if set) is called
// about five times a second, from the calling thread. stop, once set, cancels the requests in flight (they run
// again next time) and returns. InvalidArgument names the input file's bad lines.
Result<OfflineBatchProgress> run_offline_batch(const RouteContext& context, WorkQueue& strand,
                                               const OfflineBatchConfig& config,
                                               const std::function<void(const OfflineBatchProgress&)>& progress,
                                               const std::atomic<bool>& stop);

}  // namespace tokenmill::server
