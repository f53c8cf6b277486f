#include "server/background_jobs.h"

namespace tokenmill::server {

void BackgroundJobs::stop() {
  std::lock_guard lock(mu_);
  for (Job& job : jobs_) job.cancel->store(true);
  for (Job& job : jobs_) job.thread.join();
  jobs_.clear();
}

void BackgroundJobs::join_finished() {
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (it->done.load()) {
      it->thread.join();
      it = jobs_.erase(it);
    } else {
      ++it;
    }
  }
}

std::shared_ptr<std::atomic<bool>> BackgroundJobs::start(std::function<void(const std::atomic<bool>& cancel)> job) {
  std::lock_guard lock(mu_);
  join_finished();
  Job& slot = jobs_.emplace_back();
  slot.cancel = std::make_shared<std::atomic<bool>>(false);
  slot.thread = std::thread([&slot, job = std::move(job)] {
    job(*slot.cancel);
    slot.done.store(true);
  });
  return slot.cancel;
}

}  // namespace tokenmill::server
