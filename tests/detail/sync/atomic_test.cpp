// detail/sync/atomic.hpp: the alias, the fence and the futex-style wait/wake.
#include <spindle/detail/sync/atomic.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>

using namespace std::chrono_literals;
namespace detail = spindle::detail;

TEST(Atomic, AliasIsLockFreeForWords) {
  static_assert(detail::atomic<std::uint32_t>::is_always_lock_free);
  static_assert(detail::atomic<std::uint64_t>::is_always_lock_free);
  static_assert(detail::atomic<void*>::is_always_lock_free);
  detail::atomic<std::uint64_t> a{1};
  // relaxed: single-threaded test.
  EXPECT_EQ(a.fetch_add(2, std::memory_order_relaxed), 1u);
  detail::fence_seq_cst();
  // relaxed: single-threaded test.
  EXPECT_EQ(a.load(std::memory_order_relaxed), 3u);
}

TEST(Atomic, FutexWaitReturnsAtOnceWhenValueDiffers) {
  detail::atomic<std::uint32_t> word{1};
  detail::futex_wait(word, 0);  // 1 != 0: no sleep
  SUCCEED();
}

TEST(Atomic, FutexWaitUntilTimesOut) {
  detail::atomic<std::uint32_t> word{0};
  auto const start = std::chrono::steady_clock::now();
  bool in_time = true;
  while (in_time) {
    in_time = detail::futex_wait_until(word, 0, start + 20ms);
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
}

TEST(Atomic, FutexWakeOneWakesASleeper) {
  detail::atomic<std::uint32_t> word{0};
  std::thread sleeper([&] {
    // acquire: pairs with the release store below.
    while (word.load(std::memory_order_acquire) == 0) {
      detail::futex_wait(word, 0);
    }
  });
  // release: pairs with the sleeper's acquire load.
  word.store(1, std::memory_order_release);
  detail::futex_wake_one(word);
  sleeper.join();
  SUCCEED();
}

TEST(Atomic, FutexWakeAllWakesEverySleeper) {
  detail::atomic<std::uint32_t> word{0};
  std::thread a([&] {
    // acquire: pairs with the release store below.
    while (word.load(std::memory_order_acquire) == 0) {
      detail::futex_wait(word, 0);
    }
  });
  std::thread b([&] {
    // acquire: pairs with the release store below.
    while (word.load(std::memory_order_acquire) == 0) {
      detail::futex_wait(word, 0);
    }
  });
  // release: pairs with the sleepers' acquire loads.
  word.store(1, std::memory_order_release);
  detail::futex_wake_all(word);
  a.join();
  b.join();
  SUCCEED();
}
