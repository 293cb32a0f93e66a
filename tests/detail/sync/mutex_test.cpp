// detail::mutex: a futex mutex for short critical sections, usable with std::lock_guard.
#include <spindle/detail/sync/mutex.hpp>

#include <gtest/gtest.h>

#include <latch>
#include <mutex>
#include <thread>
#include <vector>

using spindle::detail::mutex;

TEST(Mutex, Example) {
  mutex m;
  int counter = 0;
  {
    std::lock_guard guard(m);
    ++counter;
  }
  EXPECT_EQ(counter, 1);
}

TEST(Mutex, TryLockFailsWhileHeld) {
  mutex m;
  ASSERT_TRUE(m.try_lock());
  EXPECT_FALSE(m.try_lock());
  m.unlock();
  EXPECT_TRUE(m.try_lock());
  m.unlock();
}

// More threads than cores increment a plain counter under the lock; any lost mutual exclusion
// shows as a wrong total (and as a race under TSan).
TEST(Mutex, ExcludesWithMoreThreadsThanCores) {
  mutex m;
  long counter = 0;
  constexpr int threads = 8;
  constexpr int per_thread = 20000;
  std::latch start(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      start.arrive_and_wait();
      for (int i = 0; i < per_thread; ++i) {
        std::lock_guard guard(m);
        ++counter;
      }
    });
  }
  for (auto& t : pool) {
    t.join();
  }
  EXPECT_EQ(counter, long{threads} * per_thread);
}
