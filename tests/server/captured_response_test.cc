// CapturedResponse: every request it stands for is answered exactly once, including one
// cancelled before its route started (the route then answers nothing itself).
#include "server/captured_response.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

namespace tokenmill::server {
namespace {

struct Answers {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> statuses;

  CapturedResponse::Done callback() {
    return [this](int status, std::string) {
      std::lock_guard lock(mu);
      statuses.push_back(status);
      cv.notify_all();
    };
  }
  std::vector<int> wait_for(size_t n) {
    std::unique_lock lock(mu);
    cv.wait_for(lock, std::chrono::seconds(5), [&] { return statuses.size() >= n; });
    return statuses;
  }
};

TEST(CapturedResponse, AnAnswerReachesTheCallbackOnce) {
  WorkQueue strand(1);
  Answers answers;
  auto response = std::make_shared<CapturedResponse>(strand, answers.callback());
  response->send(200, "application/json", "{}", {});
  response->send(500, "application/json", "{}", {});
  strand.stop();
  EXPECT_EQ(answers.statuses, std::vector<int>{200});
}

TEST(CapturedResponse, CancelledBeforeTheRouteStartedStillAnswers) {
  WorkQueue strand(1);
  Answers answers;
  auto response = std::make_shared<CapturedResponse>(strand, answers.callback());
  bool route_ran = false;
  response->cancel();
  // What prepare_generation does on the strand: a request whose client is gone never starts.
  response->post([&] {
    if (!response->connected()) return;
    route_ran = true;
  });
  EXPECT_EQ(answers.wait_for(1), std::vector<int>{CapturedResponse::kCancelledStatus});
  strand.stop();
  EXPECT_FALSE(route_ran);
}

TEST(CapturedResponse, CancelRunsTheDisconnectWatcherAndDropsTheLaterAnswer) {
  WorkQueue strand(1);
  Answers answers;
  auto response = std::make_shared<CapturedResponse>(strand, answers.callback());
  bool watcher_ran = false;
  response->watch_disconnect([&] { watcher_ran = true; });
  response->begin_stream(200, "text/event-stream", {});
  response->write_chunk("data: 1\n\n");
  response->cancel();
  response->end_stream();  // the engine's last event, after the cancel
  strand.stop();
  EXPECT_TRUE(watcher_ran);
  EXPECT_EQ(answers.statuses, std::vector<int>{CapturedResponse::kCancelledStatus});
}

}  // namespace
}  // namespace tokenmill::server
