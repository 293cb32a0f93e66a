// detail::parker under the model checker: every interleaving of park/unpark (and of a timed park
// racing its timeout) ends with the token consumed, and nothing is lost.
#include <spindle/detail/sync/parker.hpp>
#include <spindle/model/atomic.hpp>
#include <spindle/model/track_allocations.hpp>

#include <gtest/gtest.h>

#include <chrono>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle::detail::parker;
using spindle_test::explore_and_report;
using spindle_test::print_stats;

namespace {

/// One park against one unpark that wrote a payload first.
void park_sees_the_payload() {
  parker p;
  model::plain<int> payload;
  model::thread waker([&] {
    payload.set(42);
    p.unpark();
  });
  p.park();
  model::check(payload.get() == 42, "park returned before the unpark's writes were visible");
  waker.join();
}

}  // namespace

TEST(ModelParker, Example) {
  // Every schedule with up to 3 preemptions: the parked thread always sees the payload.
  auto const r = model::explore(model::exhaustive(3, 100000), park_sees_the_payload);
  EXPECT_TRUE(r) << r.message;
  EXPECT_TRUE(r.exhausted);
  print_stats("parker park/unpark", r);
}

TEST(ModelParker, ParkUnparkInTheWeakMemoryMode) {
  // The same in the C++ memory model's weak mode: a stale read of the state never loses the
  // token or shows the payload early (every schedule with up to 3 preemptions or stale reads).
  auto const r =
      explore_and_report("parker park/unpark, weak memory",
                         spindle_test::weak(model::exhaustive(3, 200000)), park_sees_the_payload);
  EXPECT_TRUE(r.exhausted);
}

TEST(ModelParker, TwoUnparkersWakeOnePark) {
  auto const r = explore_and_report("parker two unparkers", model::exhaustive(2, 200000), [] {
    parker p;
    model::thread a([&] { p.unpark(); });
    model::thread b([&] { p.unpark(); });
    p.park();
    a.join();
    b.join();
  });
  EXPECT_TRUE(r.exhausted);
}

TEST(ModelParker, TimedParkKeepsALateUnpark) {
  // park_until may time out at any point (virtual time); an unpark that loses the race with
  // the timeout must leave its token for the next park, or that park would sleep forever.
  auto const r =
      explore_and_report("parker timed park vs unpark", model::exhaustive(3, 200000), [] {
        parker p;
        model::plain<int> payload;
        model::thread waker([&] {
          payload.set(7);
          p.unpark();
        });
        auto const deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
        if (!p.park_until(deadline)) {
          p.park();
        }
        model::check(payload.get() == 7, "the token came without the unparker's writes");
        waker.join();
      });
  EXPECT_TRUE(r.exhausted);
}

TEST(ModelParker, PingPongRandomAndPct) {
  auto body = [] {
    parker ping;
    parker pong;
    model::plain<int> ball;
    model::thread other([&] {
      for (int i = 0; i < 3; ++i) {
        ping.park();
        ball.set(ball.get() + 1);
        pong.unpark();
      }
    });
    for (int i = 0; i < 3; ++i) {
      ball.set(ball.get() + 1);
      ping.unpark();
      pong.park();
    }
    model::check(ball.get() == 6, "a hit was lost");
    other.join();
  };
  explore_and_report("parker ping-pong random", model::random_schedules(1, 300), body);
  explore_and_report("parker ping-pong pct", model::pct_schedules(2, 300, 3), body);
  explore_and_report("parker ping-pong, weak memory, random",
                     spindle_test::weak(model::random_schedules(3, 300)), body);
}
