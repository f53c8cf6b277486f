#include "engine/request_stream.h"

namespace tokenmill::engine {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "unknown";
}

bool RequestStream::drain(std::vector<StreamEvent>& out) {
  std::lock_guard<std::mutex> lock(mutex_);
  while (!events_.empty()) {
    out.push_back(std::move(events_.front()));
    events_.pop_front();
  }
  return n_finished_ >= n_choices_;
}

bool RequestStream::wait_next(StreamEvent& out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return !events_.empty() || n_finished_ >= n_choices_; });
  if (events_.empty()) return false;
  out = std::move(events_.front());
  events_.pop_front();
  return true;
}

void RequestStream::set_notify(std::function<void()> notify) {
  std::lock_guard<std::mutex> lock(mutex_);
  notify_ = std::move(notify);
}

bool RequestStream::complete() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return n_finished_ >= n_choices_ && events_.empty();
}

Usage RequestStream::usage() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return usage_;
}

void RequestStream::push(StreamEvent event) {
  std::function<void()> notify;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (event.finish) ++n_finished_;
    events_.push_back(std::move(event));
    notify = notify_;
  }
  cv_.notify_all();
  if (notify) notify();
}

void RequestStream::set_usage(const Usage& usage) {
  std::lock_guard<std::mutex> lock(mutex_);
  usage_ = usage;
}

}  // namespace tokenmill::engine
