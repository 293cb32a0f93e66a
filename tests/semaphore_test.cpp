// Tests for spindle::semaphore (semaphore.hpp): permits through guards, fairness (FIFO, a waiter
// for many permits not starved by waiters for few), every timed and stop_token form for threads
// and coroutines, the select case beside channel cases, permits never lost or counted twice
// under threads and coroutines mixed, and misuse.

#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/select.hpp>
#include <spindle/semaphore.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <vector>

#include "support/eventually.hpp"
#include "support/sizes.hpp"

namespace {

using namespace std::chrono_literals;

using spindle_test::eventually;

TEST(Semaphore, PermitsReturnWhenTheGuardGoes) {
  spindle::semaphore s(3);
  {
    auto a = s.acquire();
    auto b = s.acquire(2);
    EXPECT_EQ(a.count(), 1U);
    EXPECT_EQ(b.count(), 2U);
    EXPECT_EQ(s.available(), 0U);
    EXPECT_FALSE(s.try_acquire().has_value());
    b.release();
    EXPECT_EQ(b.count(), 0U);
    EXPECT_EQ(s.available(), 2U);
  }
  EXPECT_EQ(s.available(), 3U);
}

TEST(Semaphore, ForgetKeepsThePermitsOut) {
  spindle::semaphore s(2);
  auto p = s.acquire();
  EXPECT_EQ(p.forget(), 1U);
  EXPECT_EQ(p.count(), 0U);
  EXPECT_EQ(s.available(), 1U);
  s.release();
  EXPECT_EQ(s.available(), 2U);
}

TEST(Semaphore, MovedPermitsReturnOnce) {
  spindle::semaphore s(1);
  std::optional<spindle::semaphore_permit> kept;
  {
    auto p = s.acquire();
    kept.emplace(std::move(p));
    spindle::semaphore_permit other;
    other = std::move(*kept);
    *kept = std::move(other);
  }
  EXPECT_EQ(s.available(), 0U);
  kept.reset();
  EXPECT_EQ(s.available(), 1U);
}

TEST(Semaphore, ZeroPermitsAreThereAtOnce) {
  spindle::semaphore s(0);
  auto p = s.acquire(0);
  EXPECT_EQ(p.count(), 0U);
  EXPECT_TRUE(s.try_acquire(0).has_value());
}

TEST(Semaphore, AReleaseWakesAWaitingThread) {
  spindle::semaphore s(0);
  std::atomic<bool> got{false};
  std::thread t([&] {
    auto p = s.acquire();
    got = true;
  });
  std::this_thread::sleep_for(5ms);
  EXPECT_FALSE(got.load());
  s.release();
  t.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(s.available(), 1U);
}

TEST(Semaphore, WaitersAreServedInOrder) {
  // Three threads queue one after the other; releases serve them first come, first served.
  spindle::semaphore s(0);
  std::vector<int> order;
  std::vector<std::thread> threads;
  std::mutex order_mutex;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      auto p = s.acquire();
      std::lock_guard lock(order_mutex);
      order.push_back(i);
      p.forget();
    });
    // Let thread i queue before thread i + 1 starts (the wait budget yields ~100 us first).
    // Thread i is in line before thread i + 1 starts.
    ASSERT_TRUE(eventually([&] { return s.waiting() == static_cast<std::size_t>(i + 1); }));
  }
  for (int i = 0; i < 3; ++i) {
    s.release();
    ASSERT_TRUE(eventually([&] {
      std::lock_guard lock(order_mutex);
      return order.size() == static_cast<std::size_t>(i + 1);
    }));
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

TEST(Semaphore, AWaiterForManyIsNotOvertakenByWaitersForFew) {
  // A waiter for 3 queues first, a waiter for 1 behind it. Single permits come back one at a
  // time: the first collects them while the second waits, although one permit would do for it.
  spindle::semaphore s(0);
  std::thread big([&] { auto p = s.acquire(3); });
  ASSERT_TRUE(eventually([&] { return s.waiting() == 1; }));
  std::thread small([&] { auto p = s.acquire(1); });
  ASSERT_TRUE(eventually([&] { return s.waiting() == 2; }));
  s.release();
  EXPECT_EQ(s.waiting(), 2U);  // the permit went to the first in line
  s.release();
  EXPECT_EQ(s.waiting(), 2U);
  s.release();
  EXPECT_LE(s.waiting(), 1U);  // the first is complete
  s.release();
  big.join();
  small.join();
  EXPECT_EQ(s.available(), 4U);
}

TEST(Semaphore, TryAcquireDoesNotOvertakeAWaiter) {
  spindle::semaphore s(1);
  std::thread waiter([&] { auto p = s.acquire(2); });
  ASSERT_TRUE(eventually([&] { return s.available() == 0; }));
  // One permit is there, but it belongs to the waiter for 2 now.
  EXPECT_FALSE(s.try_acquire().has_value());
  s.release();
  waiter.join();
  EXPECT_EQ(s.available(), 2U);
}

TEST(Semaphore, TimedAcquireGivesUpAndReturnsWhatItCollected) {
  spindle::semaphore s(1);
  auto const start = std::chrono::steady_clock::now();
  EXPECT_FALSE(s.acquire_for(20ms, 2).has_value());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
  // The permit it collected while queued is back.
  EXPECT_EQ(s.available(), 1U);
  EXPECT_FALSE(s.acquire_until(std::chrono::system_clock::now() + 5ms, 2).has_value());
  EXPECT_EQ(s.available(), 1U);
  auto p = s.acquire_for(0ms);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->count(), 1U);
}

TEST(Semaphore, AnExpiredDeadlineLosesToAPermitThatIsThere) {
  spindle::semaphore s(1);
  EXPECT_TRUE(s.acquire_until(std::chrono::steady_clock::now() - 1h).has_value());
  EXPECT_TRUE(s.acquire_for(std::chrono::nanoseconds::min()).has_value());
  EXPECT_TRUE(s.acquire_for(std::chrono::hours::max()).has_value());
}

TEST(Semaphore, StopEndsAWait) {
  spindle::semaphore s(0);
  std::stop_source source;
  std::atomic<bool> done{false};
  std::thread t([&] {
    EXPECT_FALSE(s.acquire(source.get_token()).has_value());
    done = true;
  });
  std::this_thread::sleep_for(5ms);
  EXPECT_FALSE(done.load());
  source.request_stop();
  t.join();
  s.release();
  EXPECT_EQ(s.available(), 1U);
  // A permit that is there wins over a stop already requested.
  EXPECT_TRUE(s.acquire(source.get_token()).has_value());
}

TEST(Semaphore, CoroutinesAcquireWithoutHoldingAWorker) {
  // More coroutines wait than the executor has workers; the workers stay free to run the
  // coroutine that releases.
  spindle::executor ex(2);
  spindle::semaphore s(0);
  std::atomic<int> got{0};
  constexpr int waiters = 16;
  std::vector<spindle::join_handle<void>> handles;
  for (int i = 0; i < waiters; ++i) {
    handles.push_back(ex.spawn([](spindle::semaphore& sem, std::atomic<int>& n) -> spindle::task<> {
      auto p = co_await sem.async_acquire();
      n.fetch_add(1);
      p.forget();
    }(s, got)));
  }
  auto releaser = ex.spawn([](spindle::semaphore& sem) -> spindle::task<> {
    for (int i = 0; i < waiters; ++i) {
      sem.release();
      co_await spindle::sleep_for(100us);
    }
  }(s));
  releaser.join();
  for (auto& h : handles) {
    h.join();
  }
  EXPECT_EQ(got.load(), waiters);
  EXPECT_EQ(s.available(), 0U);
}

TEST(Semaphore, CoroutineTimedAndStopForms) {
  spindle::semaphore s(0);
  std::stop_source source;
  source.request_stop();
  auto r =
      spindle::sync_wait([](spindle::semaphore& sem, std::stop_token st) -> spindle::task<int> {
        int score = 0;
        if (!(co_await sem.async_acquire_for(5ms))) {
          ++score;
        }
        if (!(co_await sem.async_acquire_until(std::chrono::steady_clock::now() + 2ms, 3))) {
          ++score;
        }
        if (!(co_await sem.async_acquire(st))) {
          ++score;
        }
        sem.release(2);
        auto p = co_await sem.async_acquire_for(1h, 2);
        if (p && p->count() == 2) {
          ++score;
        }
        co_return score;
      }(s, source.get_token()));
  EXPECT_EQ(r, 4);
  EXPECT_EQ(s.available(), 2U);
}

TEST(Semaphore, SelectWaitsForAPermitAndAMessage) {
  spindle::semaphore s(0);
  auto [tx, rx] = spindle::bounded<int>(1);
  std::thread t([&] {
    std::this_thread::sleep_for(5ms);
    s.release();
  });
  int which = -1;
  auto const i = spindle::select(spindle::on_acquire(s,
                                                     [&](spindle::semaphore_permit p) {
                                                       which = 0;
                                                       EXPECT_EQ(p.count(), 1U);
                                                     }),
                                 spindle::on_recv(rx, [&](std::optional<int>) { which = 1; }));
  t.join();
  EXPECT_EQ(i, 0U);
  EXPECT_EQ(which, 0);
  EXPECT_EQ(s.available(), 1U);

  // The message wins; the semaphore is left as it was.
  spindle::semaphore none(0);
  ASSERT_EQ(tx.send(7).status, spindle::send_status::sent);
  auto const j = spindle::select(spindle::on_acquire(none, 2, [](spindle::semaphore_permit) {}),
                                 spindle::on_recv(rx, [&](std::optional<int> v) { which = *v; }));
  EXPECT_EQ(j, 1U);
  EXPECT_EQ(which, 7);
  EXPECT_EQ(none.available(), 0U);
  none.release(2);
  EXPECT_EQ(none.available(), 2U);
}

TEST(Semaphore, ASelectThatLosesGivesBackWhatItCollected) {
  // The select queues for 2 permits, collects the 1 released, then a message wins: the
  // permit goes on to the next waiter.
  spindle::semaphore s(0);
  auto [tx, rx] = spindle::bounded<int>(1);
  std::thread t([&, &tx = tx] {
    std::this_thread::sleep_for(5ms);
    s.release();
    std::this_thread::sleep_for(5ms);
    EXPECT_EQ(tx.send(1).status, spindle::send_status::sent);
  });
  auto const i = spindle::select(spindle::on_acquire(s, 2, [](spindle::semaphore_permit) {}),
                                 spindle::on_recv(rx, [](std::optional<int>) {}));
  t.join();
  EXPECT_EQ(i, 1U);
  EXPECT_EQ(s.available(), 1U);
}

TEST(Semaphore, PermitsAreNeverLostOrCountedTwice) {
  // Threads and coroutines, every form, against a semaphore of 3: never more than 3 holders,
  // and all 3 permits are back at the end.
  constexpr std::size_t limit = 3;
  constexpr int rounds = 2000 / spindle_test::tsan_divisor(4);
  spindle::semaphore s(limit);
  std::atomic<std::size_t> holding{0};
  std::atomic<std::size_t> most{0};
  auto hold = [&](std::size_t n) {
    auto const now = holding.fetch_add(n) + n;
    auto seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    // Hold the permits a moment, so that the others queue behind.
    std::this_thread::yield();
    holding.fetch_sub(n);
  };
  spindle::executor ex(2);
  std::vector<spindle::join_handle<void>> coros;
  for (int c = 0; c < 4; ++c) {
    coros.push_back(ex.spawn([](spindle::semaphore& sem, auto& h, int c) -> spindle::task<> {
      for (int i = 0; i < rounds; ++i) {
        std::size_t const n = 1 + static_cast<std::size_t>((i + c) % 2);
        if (i % 3 == 0) {
          if (auto p = co_await sem.async_acquire_for(50us, n)) {
            h(n);
          }
        } else {
          auto p = co_await sem.async_acquire(n);
          h(n);
        }
      }
    }(s, hold, c)));
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < rounds; ++i) {
        std::size_t const n = 1 + static_cast<std::size_t>((i + t) % limit);
        if (i % 4 == 0) {
          if (auto p = s.acquire_for(50us, n)) {
            hold(n);
          }
        } else if (i % 4 == 1) {
          if (auto p = s.try_acquire(n)) {
            hold(n);
          }
        } else {
          auto p = s.acquire(n);
          hold(n);
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  for (auto& h : coros) {
    h.join();
  }
  EXPECT_LE(most.load(), limit);
  EXPECT_EQ(s.available(), limit);
}

TEST(Semaphore, MisuseIsReported) {
  EXPECT_THROW(spindle::semaphore(spindle::semaphore::max_permits + 1), std::invalid_argument);
  spindle::semaphore s(spindle::semaphore::max_permits);
  EXPECT_THROW(s.release(), std::overflow_error);
  EXPECT_EQ(s.available(), spindle::semaphore::max_permits);
  EXPECT_THROW(static_cast<void>(s.acquire(spindle::semaphore::max_permits + 1)),
               std::invalid_argument);
  EXPECT_THROW(static_cast<void>(s.try_acquire(spindle::semaphore::max_permits + 1)),
               std::invalid_argument);
  auto all = s.acquire(spindle::semaphore::max_permits);
  EXPECT_EQ(s.available(), 0U);
}

TEST(SemaphoreDeathTest, APermitReturnedBeyondTheMaximumAborts) {
  EXPECT_DEATH(
      {
        spindle::semaphore s(1);
        auto p = s.acquire();
        s.release(spindle::semaphore::max_permits);
      },
      "spindle: misuse: permits returned to a semaphore");
}

}  // namespace
