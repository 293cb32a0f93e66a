// detail::timer_service: the process's timer thread. Entries fire in deadline order, no earlier
// than their deadline, exactly once; cancel() removes an entry that has not fired, and once it
// returns the service no longer touches the entry (so its owner may destroy it).
#include <spindle/detail/coro/timer.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using spindle::detail::timer_entry;
using spindle::detail::timer_service;

namespace {

/// An entry that records when and in which order it fired.
struct probe {
  timer_entry entry;
  std::atomic<int> fired{0};
  std::chrono::steady_clock::time_point at{};
  std::vector<int>* order = nullptr;
  std::mutex* order_mu = nullptr;
  int id = 0;
  bool cancelled = false;

  void arm(std::chrono::steady_clock::time_point when) {
    entry.when = when;
    entry.fire = &on_fire;
    entry.context = this;
  }

  static void on_fire(timer_entry* e) noexcept {
    auto* self = static_cast<probe*>(e->context);
    self->at = std::chrono::steady_clock::now();
    if (self->order != nullptr) {
      std::lock_guard lock(*self->order_mu);
      self->order->push_back(self->id);
    }
    // release: the test reads `at` and `order` after it sees the count.
    self->fired.fetch_add(1, std::memory_order_release);
  }

  void wait_fired() const {
    // acquire: pairs with the release in on_fire().
    while (fired.load(std::memory_order_acquire) == 0) {
      std::this_thread::sleep_for(1ms);
    }
  }
};

}  // namespace

TEST(Timer, Example) {
  // An entry fires once, no earlier than its deadline, on the timer thread.
  probe p;
  auto const start = std::chrono::steady_clock::now();
  p.arm(start + 20ms);
  timer_service::instance().add(p.entry);
  p.wait_fired();
  EXPECT_GE(p.at - start, 20ms);
  std::this_thread::sleep_for(10ms);
  EXPECT_EQ(p.fired.load(), 1);
}

TEST(Timer, FiresInDeadlineOrderWhateverTheOrderOfAdding) {
  std::vector<int> order;
  std::mutex mu;
  std::vector<probe> probes(16);
  auto const base = std::chrono::steady_clock::now() + 30ms;
  // Deadlines 15, 14, ..., 0 ms after base, added in that order.
  for (std::size_t i = 0; i < probes.size(); ++i) {
    auto& p = probes[i];
    p.order = &order;
    p.order_mu = &mu;
    p.id = static_cast<int>(probes.size() - 1 - i);
    p.arm(base + std::chrono::milliseconds(p.id));
    timer_service::instance().add(p.entry);
  }
  for (auto const& p : probes) {
    p.wait_fired();
  }
  std::lock_guard lock(mu);
  ASSERT_EQ(order.size(), probes.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(order[i], static_cast<int>(i));
  }
}

TEST(Timer, CancelBeforeTheDeadlineRemovesTheEntry) {
  probe p;
  p.arm(std::chrono::steady_clock::now() + 30ms);
  timer_service::instance().add(p.entry);
  EXPECT_TRUE(timer_service::instance().cancel(p.entry));
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(p.fired.load(), 0);
  // Cancelling again finds nothing to remove.
  EXPECT_FALSE(timer_service::instance().cancel(p.entry));
}

TEST(Timer, CancelAfterFiringReturnsFalse) {
  probe p;
  p.arm(std::chrono::steady_clock::now());
  timer_service::instance().add(p.entry);
  p.wait_fired();
  EXPECT_FALSE(timer_service::instance().cancel(p.entry));
  EXPECT_EQ(p.fired.load(), 1);
}

TEST(Timer, CancellingTheMiddleOfTheHeapKeepsTheOthersInOrder) {
  std::vector<int> order;
  std::mutex mu;
  std::vector<probe> probes(9);
  auto const base = std::chrono::steady_clock::now() + 40ms;
  for (std::size_t i = 0; i < probes.size(); ++i) {
    auto& p = probes[i];
    p.order = &order;
    p.order_mu = &mu;
    p.id = static_cast<int>(i);
    p.arm(base + std::chrono::milliseconds(2 * i));
    timer_service::instance().add(p.entry);
  }
  for (std::size_t i : {1U, 4U, 7U}) {
    EXPECT_TRUE(timer_service::instance().cancel(probes[i].entry));
  }
  for (std::size_t i : {0U, 2U, 3U, 5U, 6U, 8U}) {
    probes[i].wait_fired();
  }
  std::lock_guard lock(mu);
  EXPECT_EQ(order, (std::vector<int>{0, 2, 3, 5, 6, 8}));
}

TEST(Timer, ManyThreadsAddAndCancelConcurrently) {
  // Every entry either fires exactly once or is cancelled before firing, never both.
  constexpr int threads = 4;
  constexpr int per_thread = 200;
  std::vector<std::thread> ts;
  std::atomic<int> cancelled{0};
  std::vector<probe> probes(threads * per_thread);
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        auto& p = probes[static_cast<std::size_t>(t * per_thread + i)];
        p.arm(std::chrono::steady_clock::now() + std::chrono::microseconds(i % 7 * 100));
        timer_service::instance().add(p.entry);
        if (i % 2 == 0 && timer_service::instance().cancel(p.entry)) {
          p.cancelled = true;
          cancelled.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : ts) {
    t.join();
  }
  int fired = 0;
  for (auto& p : probes) {
    if (p.cancelled) {
      EXPECT_EQ(p.fired.load(), 0);
      continue;
    }
    // Not cancelled: it fires, now or shortly (every deadline is within a millisecond).
    p.wait_fired();
    EXPECT_EQ(p.fired.load(), 1);
    ++fired;
  }
  EXPECT_EQ(fired + cancelled.load(), threads * per_thread);
}
