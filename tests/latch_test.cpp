// Tests for spindle::latch (latch.hpp): std::latch semantics (count_down, try_wait, wait,
// arrive_and_wait), every current and later wait completes once the count reaches zero, the
// timed and stop_token forms for threads and coroutines, the select case, threads and
// coroutines mixed, and misuse.

#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/latch.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <vector>

#include "support/eventually.hpp"

namespace {

using namespace std::chrono_literals;

TEST(Latch, Example) {
  spindle::latch ready(3);
  std::vector<int> parts(3, 0);
  std::vector<std::thread> workers;
  for (int i = 0; i < 3; ++i) {
    workers.emplace_back([&, i] {
      parts[static_cast<std::size_t>(i)] = i + 1;
      ready.count_down();
    });
  }
  // A coroutine waits for the three without holding a thread.
  int const sum =
      spindle::sync_wait([](spindle::latch& l, std::vector<int>& p) -> spindle::task<int> {
        co_await l.async_wait();
        co_return p[0] + p[1] + p[2];
      }(ready, parts));
  EXPECT_EQ(sum, 6);
  for (auto& t : workers) {
    t.join();
  }
}

TEST(Latch, CountsDownToZeroAndStaysOpen) {
  spindle::latch l(2);
  EXPECT_FALSE(l.try_wait());
  l.count_down();
  EXPECT_FALSE(l.try_wait());
  EXPECT_FALSE(l.wait_for(1ms));
  l.count_down();
  EXPECT_TRUE(l.try_wait());
  l.wait();
  EXPECT_TRUE(l.wait_for(0ms));
  l.count_down(0);  // counting down nothing is allowed, even at zero
  EXPECT_TRUE(l.try_wait());
}

TEST(Latch, AZeroCountIsOpenFromTheStart) {
  spindle::latch l(0);
  EXPECT_TRUE(l.try_wait());
  l.wait();
  spindle::sync_wait([](spindle::latch& x) -> spindle::task<> { co_await x.async_wait(); }(l));
}

TEST(Latch, CountDownByMany) {
  spindle::latch l(5);
  l.count_down(3);
  EXPECT_FALSE(l.try_wait());
  l.arrive_and_wait(2);
  EXPECT_TRUE(l.try_wait());
}

TEST(Latch, EveryWaitingThreadIsReleasedAtOnce) {
  spindle::latch l(1);
  std::atomic<int> woke{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      l.wait();
      woke.fetch_add(1);
    });
  }
  ASSERT_TRUE(spindle_test::eventually([&] { return l.waiting() == 4; }));
  EXPECT_EQ(woke.load(), 0);
  l.count_down();
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(woke.load(), 4);
  EXPECT_EQ(l.waiting(), 0U);
}

TEST(Latch, ArriveAndWaitReleasesAllParties) {
  constexpr int parties = 6;
  spindle::latch l(parties);
  std::atomic<int> before{0};
  std::atomic<bool> early{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < parties; ++i) {
    threads.emplace_back([&] {
      before.fetch_add(1);
      l.arrive_and_wait();
      if (before.load() != parties) {
        early = true;
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_FALSE(early.load());
}

TEST(Latch, StopAndDeadlinesEndAWait) {
  spindle::latch l(1);
  std::stop_source source;
  source.request_stop();
  EXPECT_FALSE(l.wait(source.get_token()));
  EXPECT_FALSE(l.wait_until(std::chrono::system_clock::now() + 1ms));
  EXPECT_FALSE(l.wait_for(1ms));
  EXPECT_EQ(l.waiting(), 0U);
  l.count_down();
  // An open latch wins over a stop already requested and an expired deadline.
  EXPECT_TRUE(l.wait(source.get_token()));
  EXPECT_TRUE(l.wait_until(std::chrono::steady_clock::now() - 1s));
}

TEST(Latch, AStopRequestWakesABlockedThread) {
  spindle::latch l(1);
  std::stop_source source;
  std::atomic<int> result{-1};
  std::thread t([&] { result = l.wait(source.get_token()) ? 1 : 0; });
  ASSERT_TRUE(spindle_test::eventually([&] { return l.waiting() == 1; }));
  source.request_stop();
  t.join();
  EXPECT_EQ(result.load(), 0);
  EXPECT_EQ(l.waiting(), 0U);
}

TEST(Latch, CoroutineFormsTimeOutStopAndComplete) {
  spindle::latch l(1);
  auto const score = spindle::sync_wait([](spindle::latch& x) -> spindle::task<int> {
    int s = 0;
    s += (co_await x.async_wait_for(2ms)) ? 0 : 1;
    s += (co_await x.async_wait_until(std::chrono::steady_clock::now() + 1ms)) ? 0 : 1;
    std::stop_source st;
    st.request_stop();
    s += (co_await x.async_wait(st.get_token())) ? 0 : 1;
    x.count_down();
    s += (co_await x.async_wait_for(1h)) ? 1 : 0;
    s += (co_await x.async_wait(st.get_token())) ? 1 : 0;
    co_await x.async_wait();
    co_return s;
  }(l));
  EXPECT_EQ(score, 5);
}

TEST(Latch, ThreadsAndCoroutinesMixed) {
  constexpr int coros = 16;
  spindle::executor ex(2);
  spindle::latch go(1);
  spindle::latch done(coros + 1);
  std::atomic<int> passed{0};
  std::vector<spindle::join_handle<void>> handles;
  for (int i = 0; i < coros; ++i) {
    handles.push_back(
        ex.spawn([](spindle::latch& g, spindle::latch& d, std::atomic<int>& p) -> spindle::task<> {
          co_await g.async_wait();
          p.fetch_add(1);
          d.count_down();
        }(go, done, passed)));
  }
  std::thread t([&] {
    go.wait();
    passed.fetch_add(1);
    done.count_down();
  });
  ASSERT_TRUE(spindle_test::eventually([&] { return go.waiting() == coros + 1; }));
  EXPECT_EQ(passed.load(), 0);
  go.count_down();
  done.wait();
  EXPECT_EQ(passed.load(), coros + 1);
  t.join();
  for (auto& h : handles) {
    h.join();
  }
}

TEST(Latch, SelectCase) {
  spindle::latch l(1);
  auto [tx, rx] = spindle::bounded<int>(1);
  std::thread t([&] { l.count_down(); });
  bool opened = false;
  EXPECT_EQ(spindle::select(spindle::on_counted_down(l, [&] { opened = true; }),
                            spindle::on_recv(rx, [](std::optional<int>) {})),
            0U);
  t.join();
  EXPECT_TRUE(opened);
  // An open latch is chosen at once, every time.
  EXPECT_EQ(spindle::select(spindle::on_counted_down(l, [] {}), spindle::on_timeout(1h, [] {})),
            0U);
}

TEST(Latch, SelectCaseNotChosenLeavesNoWaiter) {
  spindle::latch l(1);
  auto [tx, rx] = spindle::bounded<int>(1);
  ASSERT_TRUE(tx.send(7));
  int got = 0;
  EXPECT_EQ(spindle::select(spindle::on_counted_down(l, [] {}),
                            spindle::on_recv(rx, [&](std::optional<int> v) { got = *v; })),
            1U);
  EXPECT_EQ(got, 7);
  EXPECT_EQ(l.waiting(), 0U);
  auto const i = spindle::sync_wait([](spindle::latch& x) -> spindle::task<std::size_t> {
    auto const chosen = co_await spindle::async_select(spindle::on_counted_down(x, [] {}),
                                                       spindle::on_timeout(1ms, [] {}));
    co_return chosen;
  }(l));
  EXPECT_EQ(i, 1U);
  EXPECT_EQ(l.waiting(), 0U);
}

TEST(Latch, MisuseThrowsAndChangesNothing) {
  EXPECT_THROW(spindle::latch(-1), std::invalid_argument);
  spindle::latch l(2);
  EXPECT_THROW(l.count_down(3), std::logic_error);
  EXPECT_THROW(l.count_down(-1), std::invalid_argument);
  EXPECT_FALSE(l.try_wait());
  l.count_down(2);
  EXPECT_TRUE(l.try_wait());
  EXPECT_THROW(l.count_down(), std::logic_error);
  EXPECT_THROW(l.arrive_and_wait(), std::logic_error);
  EXPECT_TRUE(l.try_wait());
  EXPECT_EQ(spindle::latch::max(), std::numeric_limits<std::ptrdiff_t>::max());
}

TEST(Latch, MayBeDestroyedOnceItsWaitsReturned) {
  // The usual pattern: the owner waits, then the latch is gone, while the worker that opened it
  // may not have returned from count_down yet (its last access came before the wait ended).
  // A sanitizer build reports a use after free if that ever breaks.
  for (int i = 0; i < 500; ++i) {
    auto l = std::make_unique<spindle::latch>(1);
    std::thread t([p = l.get()] { p->count_down(); });
    if (i % 2 == 0) {
      l->wait();
    } else {
      while (!l->try_wait()) {
      }
    }
    l.reset();
    t.join();
  }
}

TEST(Latch, ManyCountDownsFromManyThreads) {
  constexpr int threads = 8;
  constexpr int each = 1000;
  spindle::latch l(threads * each);
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i) {
    ts.emplace_back([&] {
      for (int k = 0; k < each; ++k) {
        l.count_down();
      }
      l.wait();
    });
  }
  l.wait();
  for (auto& t : ts) {
    t.join();
  }
  EXPECT_TRUE(l.try_wait());
}

}  // namespace
