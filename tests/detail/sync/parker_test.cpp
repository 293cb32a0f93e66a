// detail::parker: a binary token that one thread sleeps on and any thread hands over.
#include <spindle/detail/sync/parker.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <latch>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using spindle::detail::parker;

TEST(Parker, Example) {
  parker p;
  int payload = 0;
  std::thread waker([&] {
    payload = 42;  // published to the parked thread by unpark()
    p.unpark();
  });
  p.park();
  EXPECT_EQ(payload, 42);
  waker.join();
}

TEST(Parker, UnparkBeforeParkIsNotLost) {
  parker p;
  p.unpark();
  p.park();  // returns at once: the token was already there
  SUCCEED();
}

TEST(Parker, SeveralUnparksLeaveOneToken) {
  parker p;
  p.unpark();
  p.unpark();
  p.park();
  EXPECT_FALSE(p.park_for(1ms)) << "a second park must not find a second token";
}

TEST(Parker, ParkForTimesOutWithoutToken) {
  parker p;
  auto const start = std::chrono::steady_clock::now();
  EXPECT_FALSE(p.park_for(20ms));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
}

TEST(Parker, ParkUntilPastDeadlineReturnsAtOnce) {
  parker p;
  EXPECT_FALSE(p.park_until(std::chrono::steady_clock::now() - 1s));
  p.unpark();
  EXPECT_TRUE(p.park_until(std::chrono::steady_clock::now() - 1s))
      << "an available token is taken even when the deadline has passed";
}

TEST(Parker, TokenAfterTimeoutIsKept) {
  parker p;
  EXPECT_FALSE(p.park_for(1ms));
  p.unpark();
  EXPECT_TRUE(p.park_for(10s));
}

// Ping-pong through two parkers many times: any lost wake-up hangs, and ctest's timeout fails
// the test. Every round trip goes through a real sleep or a token handed over early.
TEST(Parker, PingPongLosesNoWakeUp) {
  parker ping;
  parker pong;
  constexpr int rounds = 20000;
  int shared = 0;  // plain int: each side's write is published by its unpark()
  std::thread other([&] {
    for (int i = 0; i < rounds; ++i) {
      ping.park();
      ASSERT_EQ(shared, 2 * i + 1);
      shared = 2 * i + 2;
      pong.unpark();
    }
  });
  for (int i = 0; i < rounds; ++i) {
    shared = 2 * i + 1;
    ping.unpark();
    pong.park();
    ASSERT_EQ(shared, 2 * i + 2);
  }
  other.join();
}

// More threads than cores, each unparking a shared waiter that counts to a target.
TEST(Parker, ManyUnparkersWakeTheOwner) {
  parker p;
  std::atomic<int> done{0};
  constexpr int threads = 6;
  std::latch start(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      start.arrive_and_wait();
      done.fetch_add(1, std::memory_order_release);
      p.unpark();
    });
  }
  while (done.load(std::memory_order_acquire) < threads) {
    p.park();
  }
  for (auto& t : pool) {
    t.join();
  }
  EXPECT_EQ(done.load(), threads);
}

TEST(Parker, ParkForSaturatesExtremeTimeouts) {
  // A timeout past what steady_clock can hold never expires (it used to overflow into the
  // past and return at once); a negative or NaN one is already over.
  parker p;
  EXPECT_FALSE(p.park_for(std::chrono::nanoseconds::min()));
  EXPECT_FALSE(p.park_for(std::chrono::duration<double>(std::nan(""))));
  EXPECT_FALSE(p.park_for(std::chrono::duration<double>(-HUGE_VAL)));
  for (auto forever : {std::chrono::duration<double>(std::chrono::hours::max()),
                       std::chrono::duration<double>(HUGE_VAL)}) {
    std::atomic<bool> woke{false};
    std::thread waker([&] {
      std::this_thread::sleep_for(50ms);
      woke.store(true);
      p.unpark();
    });
    EXPECT_TRUE(p.park_for(forever));
    EXPECT_TRUE(woke.load());  // it returned for the token, not for a deadline
    waker.join();
  }
  EXPECT_TRUE([&] {
    std::thread waker([&] {
      std::this_thread::sleep_for(50ms);
      p.unpark();
    });
    bool const r = p.park_for(std::chrono::hours::max());
    waker.join();
    return r;
  }());
}
