// Tests for spindle::mutex and spindle::shared_mutex (mutex.hpp): guards, every timed and
// stop_token form for threads and coroutines, a coroutine holding the lock across a suspension,
// FIFO hand-off, readers together and a writer that readers do not starve, the select cases,
// and mutual exclusion under threads and coroutines mixed.

#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/mutex.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <stop_token>
#include <thread>
#include <vector>

#include "support/eventually.hpp"
#include "support/sizes.hpp"

namespace {

using namespace std::chrono_literals;

using spindle_test::eventually;

TEST(Mutex, TheGuardUnlocks) {
  spindle::mutex m;
  EXPECT_FALSE(m.is_locked());
  {
    auto g = m.lock();
    EXPECT_TRUE(g.owns_lock());
    EXPECT_TRUE(m.is_locked());
    EXPECT_FALSE(m.try_lock().has_value());
    g.unlock();
    EXPECT_FALSE(g.owns_lock());
    EXPECT_FALSE(m.is_locked());
    g.unlock();  // holds nothing: no effect
    auto again = m.try_lock();
    ASSERT_TRUE(again.has_value());
    g = std::move(*again);
    EXPECT_TRUE(g.owns_lock());
    EXPECT_FALSE(again->owns_lock());
  }
  EXPECT_FALSE(m.is_locked());
}

TEST(Mutex, TimedAndStopFormsGiveUp) {
  spindle::mutex m;
  auto g = m.lock();
  std::thread t([&] {
    EXPECT_FALSE(m.lock_for(10ms).has_value());
    EXPECT_FALSE(m.lock_until(std::chrono::system_clock::now() + 2ms).has_value());
    std::stop_source source;
    source.request_stop();
    EXPECT_FALSE(m.lock(source.get_token()).has_value());
  });
  t.join();
  g.unlock();
  std::stop_source source;
  source.request_stop();
  // A free lock wins over an expired deadline or a requested stop.
  EXPECT_TRUE(m.lock_for(-1s).has_value());
  EXPECT_TRUE(m.lock(source.get_token()).has_value());
  EXPECT_FALSE(m.is_locked());
}

TEST(Mutex, UnlockHandsTheLockToTheOldestWaiter) {
  spindle::mutex m;
  auto g = m.lock();
  std::vector<int> order;
  std::vector<std::thread> threads;
  std::atomic<bool> checked{false};
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      auto mine = m.lock();
      order.push_back(i);  // under the lock
      while (!checked.load()) {
        std::this_thread::yield();
      }
    });
    // Thread i is in line before thread i + 1 starts.
    ASSERT_TRUE(eventually([&] { return m.waiting() == static_cast<std::size_t>(i + 1); }));
  }
  // The unlocking thread cannot take the lock back ahead of the waiters.
  g.unlock();
  EXPECT_FALSE(m.try_lock().has_value());
  checked = true;
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

TEST(Mutex, ACoroutineHoldsTheLockAcrossASuspension) {
  spindle::executor ex(2);
  spindle::mutex m;
  int shared = 0;  // guarded by m
  constexpr int coroutines = 8;
  constexpr int rounds = 200 / spindle_test::tsan_divisor(4);
  std::vector<spindle::join_handle<void>> handles;
  for (int c = 0; c < coroutines; ++c) {
    handles.push_back(ex.spawn([](spindle::mutex& mu, int& value) -> spindle::task<> {
      for (int i = 0; i < rounds; ++i) {
        auto g = co_await mu.async_lock();
        int const seen = value;
        if (i % 16 == 0) {
          // Suspended while holding the lock: the others wait without holding a worker.
          co_await spindle::sleep_for(10us);
        }
        value = seen + 1;
      }
    }(m, shared)));
  }
  for (int t = 0; t < 2; ++t) {
    for (int i = 0; i < rounds; ++i) {
      auto g = m.lock();
      ++shared;
    }
  }
  for (auto& h : handles) {
    h.join();
  }
  auto g = m.lock();
  EXPECT_EQ(shared, (coroutines + 2) * rounds);
}

TEST(Mutex, CoroutineTimedAndStopForms) {
  spindle::mutex m;
  auto held = m.lock();
  std::stop_source source;
  source.request_stop();
  auto const score =
      spindle::sync_wait([](spindle::mutex& mu, std::stop_token st) -> spindle::task<int> {
        int s = 0;
        s += (co_await mu.async_lock_for(5ms)) ? 0 : 1;
        s += (co_await mu.async_lock_until(std::chrono::steady_clock::now() + 1ms)) ? 0 : 1;
        s += (co_await mu.async_lock(st)) ? 0 : 1;
        co_return s;
      }(m, source.get_token()));
  EXPECT_EQ(score, 3);
  held.unlock();
  EXPECT_FALSE(m.is_locked());
}

TEST(Mutex, SelectLocksOrReceives) {
  spindle::mutex m;
  auto [tx, rx] = spindle::bounded<int>(1);
  auto held = m.lock();
  ASSERT_EQ(tx.send(3).status, spindle::send_status::sent);
  int got = 0;
  EXPECT_EQ(spindle::select(spindle::on_lock(m, [](spindle::mutex_guard) {}),
                            spindle::on_recv(rx, [&](std::optional<int> v) { got = *v; })),
            1U);
  EXPECT_EQ(got, 3);
  std::thread t([&] {
    std::this_thread::sleep_for(5ms);
    held.unlock();
  });
  bool locked = false;
  EXPECT_EQ(
      spindle::select(spindle::on_lock(m, [&](spindle::mutex_guard g) { locked = g.owns_lock(); }),
                      spindle::on_recv(rx, [&](std::optional<int>) {})),
      0U);
  t.join();
  EXPECT_TRUE(locked);
  EXPECT_FALSE(m.is_locked());
}

TEST(SharedMutex, ReadersShareAndAWriterExcludes) {
  spindle::shared_mutex rw;
  auto r1 = rw.lock_shared();
  auto r2 = rw.try_lock_shared();
  ASSERT_TRUE(r2.has_value());
  EXPECT_FALSE(rw.try_lock().has_value());
  EXPECT_FALSE(rw.lock_for(2ms).has_value());
  r1.unlock();
  r2->unlock();
  auto w = rw.try_lock();
  ASSERT_TRUE(w.has_value());
  EXPECT_FALSE(rw.try_lock_shared().has_value());
  EXPECT_FALSE(rw.lock_shared_for(2ms).has_value());
  w->unlock();
  EXPECT_TRUE(rw.try_lock_shared().has_value());
}

TEST(SharedMutex, ReadersDoNotStarveAWriter) {
  // A reader holds; a writer queues; a reader that comes after the writer waits for it.
  spindle::shared_mutex rw;
  auto first = rw.lock_shared();
  std::atomic<int> stage{0};
  std::thread writer([&] {
    auto w = rw.lock();
    int expected = 0;
    stage.compare_exchange_strong(expected, 1);
  });
  ASSERT_TRUE(eventually([&] { return rw.waiting() == 1; }));
  EXPECT_FALSE(rw.try_lock_shared().has_value());
  std::thread late_reader([&] {
    auto r = rw.lock_shared();
    int expected = 1;
    stage.compare_exchange_strong(expected, 2);
  });
  ASSERT_TRUE(eventually([&] { return rw.waiting() == 2; }));
  EXPECT_EQ(stage.load(), 0);
  first.unlock();
  writer.join();
  late_reader.join();
  EXPECT_EQ(stage.load(), 2);
}

TEST(SharedMutex, ExclusionUnderThreadsAndCoroutines) {
  spindle::shared_mutex rw;
  std::atomic<int> readers{0};
  std::atomic<int> writers{0};
  std::atomic<bool> broken{false};
  int value = 0;  // written under the exclusive lock
  constexpr int rounds = 1000 / spindle_test::tsan_divisor(4);
  auto check = [&] {
    if (writers.load() > 1 || (writers.load() == 1 && readers.load() > 0)) {
      broken = true;
    }
  };
  spindle::executor ex(2);
  std::vector<spindle::join_handle<void>> handles;
  for (int c = 0; c < 4; ++c) {
    handles.push_back(
        ex.spawn([](auto& lock, auto& rd, auto& wr, auto& chk, int& v, int c) -> spindle::task<> {
          for (int i = 0; i < rounds; ++i) {
            if ((i + c) % 4 == 0) {
              auto g = co_await lock.async_lock();
              wr.fetch_add(1);
              chk();
              ++v;
              wr.fetch_sub(1);
            } else {
              auto g = co_await lock.async_lock_shared();
              rd.fetch_add(1);
              chk();
              rd.fetch_sub(1);
            }
          }
        }(rw, readers, writers, check, value, c)));
  }
  // The exclusive sections: the coroutines' and the threads' below.
  int writes = 0;
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < rounds; ++i) {
      writes += (i + c) % 4 == 0 ? 1 : 0;
    }
  }
  for (int i = 0; i < rounds; ++i) {
    writes += i % 3 == 0 ? 2 : 0;
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < rounds; ++i) {
        if (i % 3 == 0) {
          auto g = rw.lock();
          writers.fetch_add(1);
          check();
          ++value;
          writers.fetch_sub(1);
        } else {
          auto g = rw.lock_shared();
          readers.fetch_add(1);
          check();
          std::this_thread::yield();
          readers.fetch_sub(1);
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  for (auto& h : handles) {
    h.join();
  }
  EXPECT_FALSE(broken.load());
  auto g = rw.lock();
  EXPECT_EQ(value, writes);
}

TEST(SharedMutex, SelectCases) {
  spindle::shared_mutex rw;
  int which = -1;
  EXPECT_EQ(spindle::select(spindle::on_lock_shared(rw, [&](spindle::mutex_guard) { which = 0; }),
                            spindle::on_default([&] { which = 1; })),
            0U);
  EXPECT_EQ(which, 0);
  auto r = rw.lock_shared();
  EXPECT_EQ(spindle::select(spindle::on_lock(rw, [&](spindle::mutex_guard) { which = 2; }),
                            spindle::on_default([&] { which = 3; })),
            1U);
  EXPECT_EQ(which, 3);
}

}  // namespace
