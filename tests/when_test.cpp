// Tests for spindle/when.hpp and the cancellation of started coroutines (detail/coro/cancel.hpp):
// join_handle::cancel on a coroutine suspended in a channel operation, a sleep, a sync
// primitive or a join; a ready operation winning over a request; a coroutine that catches the
// cancellation; when_all, when_any and timeout on an executor and inside sync_wait, with errors,
// cancellation flowing into the children, range forms and values destroyed exactly once.

#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/mutex.hpp>
#include <spindle/task.hpp>
#include <spindle/when.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <latch>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "support/tracked.hpp"

namespace {

using namespace std::chrono_literals;
using spindle_test::tracked;

auto recv_one(spindle::receiver<int> rx) -> spindle::task<int> {
  auto v = co_await rx.async_recv();
  co_return v.value_or(-1);
}

void wait_until(std::atomic<bool> const& flag) {
  while (!flag.load()) {
    std::this_thread::yield();
  }
}

auto value(int v) -> spindle::task<int> {
  co_return v;
}

auto text(std::string s) -> spindle::task<std::string> {
  co_await spindle::sleep_for(1ms);
  co_return s;
}

auto nothing() -> spindle::task<void> {
  co_return;
}

auto fail_after(std::chrono::milliseconds d) -> spindle::task<int> {
  co_await spindle::sleep_for(d);
  throw std::runtime_error("child failed");
}

auto sleep_long() -> spindle::task<int> {
  co_await spindle::sleep_for(1h);
  co_return 1;
}

TEST(CoroCancel, CancelEndsARecvWait) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(1);
  auto h = ex.spawn(recv_one(std::move(rx)));
  // Whether the coroutine is already suspended or not, its wait ends with task_cancelled.
  EXPECT_TRUE(h.cancel());
  EXPECT_THROW(h.join(), spindle::task_cancelled);
}

TEST(CoroCancel, CancelEndsASleep) {
  spindle::executor ex(2);
  auto const start = std::chrono::steady_clock::now();
  auto h = ex.spawn(sleep_long());
  EXPECT_TRUE(h.cancel());
  EXPECT_THROW(h.join(), spindle::task_cancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1min);
}

TEST(CoroCancel, CancelAfterTheEndReturnsFalse) {
  spindle::executor ex(2);
  auto h = ex.spawn(value(3));
  while (!h.is_ready()) {
    std::this_thread::yield();
  }
  EXPECT_FALSE(h.cancel());
  EXPECT_EQ(h.join(), 3);
}

TEST(CoroCancel, UnstartedCoroutineNeverRunsAndItsFrameIsDestroyed) {
  spindle::executor ex(1);
  std::latch gate(1);
  auto blocker = ex.spawn([&] { gate.wait(); });
  std::int64_t const before = tracked::live();
  std::atomic<bool> ran{false};
  auto body = [](tracked t, std::atomic<bool>* r) -> spindle::task<int> {
    r->store(true);
    co_return static_cast<int>(t.id());
  };
  auto h = ex.spawn(body(tracked(5), &ran));
  EXPECT_TRUE(h.cancel());
  EXPECT_EQ(tracked::live(), before);
  gate.count_down();
  blocker.join();
  EXPECT_THROW(h.join(), spindle::task_cancelled);
  EXPECT_FALSE(ran.load());
}

TEST(CoroCancel, ACaughtCancellationLetsTheCoroutineGoOnAndLaterWaitsEndAtOnce) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(1);
  std::atomic<bool> started{false};
  auto body = [](spindle::receiver<int> r, std::atomic<bool>* up) -> spindle::task<int> {
    up->store(true);
    int caught = 0;
    for (int i = 0; i < 3; ++i) {
      try {
        co_await r.async_recv();
      } catch (spindle::task_cancelled const&) {
        ++caught;
      }
    }
    bool const asked = co_await spindle::cancellation_requested();
    co_return asked ? caught : -1;
  };
  auto h = ex.spawn(body(std::move(rx), &started));
  wait_until(started);
  EXPECT_TRUE(h.cancel());
  EXPECT_EQ(h.join(), 3);
}

TEST(CoroCancel, AReadyOperationWinsOverTheRequest) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(4);
  ASSERT_TRUE(tx.send(42).is_sent());
  // The coroutine sees its cancellation (without waiting), then receives a value that is ready:
  // only a wait ends with task_cancelled.
  std::atomic<bool> started{false};
  auto body = [](spindle::receiver<int> r, std::atomic<bool>* up) -> spindle::task<int> {
    up->store(true);
    while (!(co_await spindle::cancellation_requested())) {
      std::this_thread::yield();
    }
    auto v = co_await r.async_recv();
    co_return v.value_or(-1);
  };
  auto h = ex.spawn(body(std::move(rx), &started));
  wait_until(started);
  EXPECT_TRUE(h.cancel());
  EXPECT_EQ(h.join(), 42);
}

TEST(CoroCancel, CancelEndsAMutexWaitAndLeavesTheMutexUsable) {
  spindle::executor ex(2);
  spindle::mutex m;
  auto guard = m.lock();
  auto body = [](spindle::mutex* mu) -> spindle::task<int> {
    auto g = co_await mu->async_lock();
    co_return 1;
  };
  auto h = ex.spawn(body(&m));
  EXPECT_TRUE(h.cancel());
  EXPECT_THROW(h.join(), spindle::task_cancelled);
  guard = spindle::mutex_guard();
  EXPECT_TRUE(m.try_lock().has_value());
}

TEST(CoroCancel, CancellingAJoinerCancelsWhatItJoins) {
  spindle::executor ex(2);
  auto inner = ex.spawn(sleep_long());
  std::atomic<bool> started{false};
  auto outer_body = [](spindle::join_handle<int> j, std::atomic<bool>* up) -> spindle::task<int> {
    up->store(true);
    co_return co_await std::move(j);
  };
  auto outer = ex.spawn(outer_body(std::move(inner), &started));
  // Started: the handle it awaits is in its frame (a cancel before the start would destroy the
  // frame and so detach the inner task, which then sleeps its hour).
  wait_until(started);
  EXPECT_TRUE(outer.cancel());
  EXPECT_THROW(outer.join(), spindle::task_cancelled);
}

TEST(WhenAll, ReturnsEveryResultInOrder) {
  spindle::executor ex(4);
  auto h = ex.spawn(spindle::when_all(value(1), text("two"), nothing(), value(4)));
  auto [a, b, c, d] = h.join();
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, "two");
  EXPECT_EQ(c, std::monostate{});
  EXPECT_EQ(d, 4);
}

TEST(WhenAll, ChildrenRunSideBySideInsideSyncWait) {
  // Each child waits for the other: only concurrent children finish.
  auto [atx, arx] = spindle::bounded<int>(0);
  auto [btx, brx] = spindle::bounded<int>(0);
  auto ping = [](spindle::sender<int> out, spindle::receiver<int> in) -> spindle::task<int> {
    auto sent = co_await out.async_send(1);
    EXPECT_TRUE(sent.is_sent());
    auto v = co_await in.async_recv();
    co_return v.value_or(-1);
  };
  auto pong = [](spindle::receiver<int> in, spindle::sender<int> out) -> spindle::task<int> {
    auto v = co_await in.async_recv();
    auto sent = co_await out.async_send(v.value_or(0) + 1);
    co_return sent.is_sent() ? 0 : -1;
  };
  auto r = spindle::sync_wait(spindle::when_all(ping(std::move(atx), std::move(brx)),
                                                pong(std::move(arx), std::move(btx))));
  EXPECT_EQ(std::get<0>(r), 2);
}

TEST(WhenAll, TheFirstErrorCancelsTheOthersAndIsRethrown) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(1);
  auto const start = std::chrono::steady_clock::now();
  auto h = ex.spawn(spindle::when_all(recv_one(std::move(rx)), fail_after(2ms), sleep_long()));
  try {
    static_cast<void>(h.join());
    ADD_FAILURE() << "when_all returned";
  } catch (std::runtime_error const& e) {
    EXPECT_STREQ(e.what(), "child failed");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1min);
}

TEST(WhenAll, CancellingTheParentCancelsEveryChild) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(1);
  auto h = ex.spawn(spindle::when_all(recv_one(std::move(rx)), sleep_long()));
  EXPECT_TRUE(h.cancel());
  EXPECT_THROW(static_cast<void>(h.join()), spindle::task_cancelled);
}

TEST(WhenAll, RangeForm) {
  spindle::executor ex(4);
  std::vector<spindle::task<int>> tasks;
  for (int i = 0; i < 100; ++i) {
    tasks.push_back(value(i));
  }
  auto h = ex.spawn(spindle::when_all(std::move(tasks)));
  auto r = h.join();
  ASSERT_EQ(r.size(), 100U);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(r[static_cast<std::size_t>(i)], i);
  }
  std::vector<spindle::task<void>> none;
  spindle::sync_wait(spindle::when_all(std::move(none)));
}

TEST(WhenAll, EveryValueIsDestroyedOnce) {
  std::int64_t const before = tracked::live();
  {
    spindle::executor ex(2);
    auto make = [](int v) -> spindle::task<tracked> {
      co_await spindle::sleep_for(1ms);
      co_return tracked(v);
    };
    auto failing = []() -> spindle::task<tracked> {
      co_await spindle::sleep_for(1ms);
      throw std::runtime_error("no value");
    };
    auto ok = ex.spawn(spindle::when_all(make(1), make(2)));
    auto [a, b] = ok.join();
    EXPECT_EQ(a.id() + b.id(), 3U);
    auto bad = ex.spawn(spindle::when_all(make(3), failing(), make(4)));
    EXPECT_THROW(static_cast<void>(bad.join()), std::runtime_error);
  }
  EXPECT_EQ(tracked::live(), before);
}

TEST(WhenAny, TheFirstToEndWinsAndTheOthersAreCancelled) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(1);
  auto const start = std::chrono::steady_clock::now();
  auto h = ex.spawn(spindle::when_any(sleep_long(), recv_one(std::move(rx)), sleep_long()));
  ASSERT_TRUE(tx.send(7).is_sent());
  auto r = h.join();
  ASSERT_EQ(r.index(), 1U);
  EXPECT_EQ(std::get<1>(r), 7);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1min);
}

TEST(WhenAny, TheWinnersErrorIsRethrown) {
  spindle::executor ex(2);
  auto h = ex.spawn(spindle::when_any(sleep_long(), fail_after(1ms)));
  EXPECT_THROW(static_cast<void>(h.join()), std::runtime_error);
}

TEST(WhenAny, RangeFormAndVoid) {
  spindle::executor ex(2);
  std::vector<spindle::task<int>> tasks;
  tasks.push_back(sleep_long());
  tasks.push_back(value(9));
  auto r = ex.spawn(spindle::when_any(std::move(tasks))).join();
  EXPECT_EQ(r.first, 1U);
  EXPECT_EQ(r.second, 9);
  std::vector<spindle::task<void>> voids;
  voids.push_back(nothing());
  EXPECT_EQ(spindle::sync_wait(spindle::when_any(std::move(voids))), 0U);
  std::vector<spindle::task<int>> empty;
  EXPECT_THROW(static_cast<void>(spindle::sync_wait(spindle::when_any(std::move(empty)))),
               std::invalid_argument);
}

TEST(Timeout, ATaskThatEndsInTimeGivesItsValue) {
  spindle::executor ex(2);
  auto r = ex.spawn(spindle::timeout(value(5), 1h)).join();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, 5);
  EXPECT_TRUE(spindle::sync_wait(spindle::timeout(nothing(), 1h)));
}

TEST(Timeout, ATaskThatWaitsTooLongIsCancelled) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(1);
  auto r = ex.spawn(spindle::timeout(recv_one(std::move(rx)), 5ms)).join();
  EXPECT_FALSE(r.has_value());
  auto never = []() -> spindle::task<void> { co_await spindle::sleep_for(1h); };
  EXPECT_FALSE(spindle::sync_wait(spindle::timeout(never(), 2ms)));
}

TEST(Timeout, NestsInsideWhenAll) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(1);
  auto h = ex.spawn(spindle::when_all(spindle::timeout(recv_one(std::move(rx)), 3ms),
                                      spindle::timeout(value(1), 1h)));
  auto [a, b] = h.join();
  EXPECT_FALSE(a.has_value());
  EXPECT_EQ(b, 1);
}

}  // namespace
