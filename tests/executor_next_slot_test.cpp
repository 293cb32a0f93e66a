// A coroutine woken by a worker's task goes to that worker's next slot (scheduler.hpp,
// push_resumed). When the task then keeps the thread, the executor's next-slot watch
// (detail/executor/next_slot.hpp) moves the coroutine to a worker that is free:
//   - a task that wakes a coroutine and then blocks its thread until the coroutine answers, by
//     means spindle does not see (a std::future), gets its answer (it waited for ever before);
//   - a task that wakes a coroutine and computes on does not hold the coroutine until it ends;
//   - every message and every resumption arrives exactly once while the watch moves them.
// Each wait in these tests is bounded (a future's wait_for, eventually()), so a regression
// fails instead of hanging.
#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/dump.hpp>
#include <spindle/executor.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <future>
#include <thread>
#include <utility>
#include <vector>

#include "support/eventually.hpp"

namespace {

using namespace std::chrono_literals;

auto replier(spindle::receiver<std::promise<int>*> in) -> spindle::task<void> {
  while (auto p = co_await in.async_recv()) {
    (*p)->set_value(42);
  }
}

/// Whether the executor's one coroutine (listed) is suspended: the next message wakes it
/// through the sender's worker.
auto suspended(spindle::executor& ex) -> bool {
  auto const d = spindle::snapshot(ex);
  return d.listed_coroutines.size() == 1 &&
         d.listed_coroutines[0].state == spindle::coroutine_state::suspended;
}

auto stuck_resumptions(spindle::executor& ex) -> std::uint64_t {
  std::uint64_t n = 0;
  for (auto const& w : ex.metrics().workers) {
    n += w.stuck_resumptions;
  }
  return n;
}

TEST(ExecutorNextSlot, TaskBlockedOutsideSpindleGetsTheCoroutinesAnswer) {
  constexpr int rounds = 3;
  spindle::executor ex(spindle::executor_options().workers(2).list_coroutines(true));
  auto [tx, rx] = spindle::bounded<std::promise<int>*>(4);
  auto coroutine = ex.spawn(replier(std::move(rx)));
  std::promise<std::future_status> outcome;
  auto outcome_future = outcome.get_future();
  // Several rounds: the replier is suspended in async_recv each time a task wakes it.
  for (int round = 0; round < rounds; ++round) {
    ASSERT_TRUE(spindle_test::eventually([&] { return suspended(ex); }));
    outcome = std::promise<std::future_status>();
    outcome_future = outcome.get_future();
    ex.post([&outcome, sender = tx]() mutable {
      std::promise<int> reply;
      auto answer = reply.get_future();
      EXPECT_TRUE(sender.try_send(&reply).is_sent());
      // Blocks this worker's thread; the replier was woken into this worker's next slot.
      auto const status = answer.wait_for(60s);
      if (status == std::future_status::ready) {
        EXPECT_EQ(answer.get(), 42);
      }
      outcome.set_value(status);
    });
    ASSERT_EQ(outcome_future.wait_for(120s), std::future_status::ready);
    ASSERT_EQ(outcome_future.get(), std::future_status::ready) << "round " << round;
  }
  // Each round's resumption waited in the slot of a worker whose thread was blocked, and
  // only the watch could move it.
  EXPECT_EQ(stuck_resumptions(ex), static_cast<std::uint64_t>(rounds));
  tx.close();
  coroutine.join();
}

auto flag_each(spindle::receiver<int> in, std::atomic<int>* received) -> spindle::task<void> {
  while (auto v = co_await in.async_recv()) {
    received->store(*v, std::memory_order_release);
  }
}

TEST(ExecutorNextSlot, ComputingWakerDoesNotHoldTheCoroutine) {
  spindle::executor ex(spindle::executor_options().workers(2).list_coroutines(true));
  auto [tx, rx] = spindle::bounded<int>(4);
  std::atomic<int> received{0};
  auto coroutine = ex.spawn(flag_each(std::move(rx), &received));
  ASSERT_TRUE(spindle_test::eventually([&] { return suspended(ex); }));
  std::promise<bool> outcome;
  auto outcome_future = outcome.get_future();
  ex.post([&outcome, &received, sender = tx]() mutable {
    EXPECT_TRUE(sender.try_send(1).is_sent());
    // Computes (polls) until the coroutine has the message: before the watch, the coroutine
    // ran only once this task returned.
    bool const seen =
        spindle_test::eventually([&] { return received.load(std::memory_order_acquire) == 1; }, 60s,
                                 std::chrono::microseconds(0));
    outcome.set_value(seen);
  });
  ASSERT_EQ(outcome_future.wait_for(120s), std::future_status::ready);
  EXPECT_TRUE(outcome_future.get());
  EXPECT_EQ(stuck_resumptions(ex), 1U);
  tx.close();
  coroutine.join();
}

auto count_all(spindle::receiver<int> in, std::vector<int>* seen) -> spindle::task<void> {
  while (auto v = co_await in.async_recv()) {
    ++(*seen)[static_cast<std::size_t>(*v)];
  }
}

TEST(ExecutorNextSlot, EveryMessageOnceWhileTheWatchMovesResumptions) {
  constexpr int rounds = 200;
  spindle::executor ex{3};
  // Room for every message: a send never blocks, so no worker's thread waits for the
  // coroutine through the channel (with all three blocked in sends, nobody could run it).
  auto [tx, rx] = spindle::bounded<int>(rounds);
  std::vector<int> seen(rounds, 0);
  auto coroutine = ex.spawn(count_all(std::move(rx), &seen));
  std::atomic<int> done{0};
  for (int i = 0; i < rounds; ++i) {
    ex.post([i, &done, sender = tx]() mutable {
      EXPECT_TRUE(sender.send(i).is_sent());
      // Keep the thread for 0 to 2.5 ms, so that some resumptions are moved by the watch
      // and some are taken back by their worker, around the watch's period.
      auto const until = std::chrono::steady_clock::now() + std::chrono::microseconds(i % 6 * 500);
      while (std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
      done.fetch_add(1, std::memory_order_release);
    });
  }
  ASSERT_TRUE(spindle_test::eventually(
      [&] { return done.load(std::memory_order_acquire) == rounds; }, 120s));
  tx.close();
  coroutine.join();
  for (int i = 0; i < rounds; ++i) {
    EXPECT_EQ(seen[static_cast<std::size_t>(i)], 1) << i;
  }
}

auto echo(spindle::receiver<int> in, spindle::sender<int> out) -> spindle::task<void> {
  while (auto v = co_await in.async_recv()) {
    auto sent = co_await out.async_send(*v + 1);
    if (!sent) {
      co_return;
    }
  }
}

auto ping(spindle::sender<int> out, spindle::receiver<int> in, int rounds) -> spindle::task<int> {
  int last = 0;
  for (int i = 0; i < rounds; ++i) {
    auto sent = co_await out.async_send(last);
    if (!sent) {
      co_return -1;
    }
    auto v = co_await in.async_recv();
    if (!v) {
      co_return -1;
    }
    last = *v;
  }
  co_return last;
}

TEST(ExecutorNextSlot, PingPongWithTheWatchRunning) {
  // Two coroutines passing one value back and forth through the next slot, while the watch
  // looks every millisecond: every round trip arrives once and in order.
  constexpr int rounds = 20000;
  spindle::executor ex{2};
  auto [to_echo, echo_in] = spindle::bounded<int>(1);
  auto [echo_out, from_echo] = spindle::bounded<int>(1);
  auto e = ex.spawn(echo(std::move(echo_in), std::move(echo_out)));
  auto p = ex.spawn(ping(std::move(to_echo), std::move(from_echo), rounds));
  EXPECT_EQ(p.join(), rounds);
  e.join();
}

}  // namespace
