// Stress tests for spindle/detail/executor/injector.hpp with more threads than cores: pushers and
// poppers across many block boundaries (small blocks, so the spare block is recycled and new
// blocks are allocated all the time), and close() racing the pushers. Every accepted task is
// taken exactly once; a refused push leaves nothing behind.

#include <spindle/detail/executor/injector.hpp>
#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/sync/config.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include "support/sizes.hpp"

using spindle::detail::basic_injector;
using spindle::detail::task;

namespace {

constexpr std::size_t per_pusher = 40'000 / spindle_test::tsan_divisor<std::size_t>(10);

void no_op(task* /*unused*/) noexcept {}

/// Tasks, and how often each was taken.
struct ledger {
  explicit ledger(std::size_t n)
      : tasks(n, task(&no_op)), taken(std::make_unique<std::atomic<std::uint32_t>[]>(n)) {}

  void take(task* t) noexcept {
    taken[static_cast<std::size_t>(t - tasks.data())].fetch_add(1, std::memory_order_relaxed);
    count.fetch_add(1, std::memory_order_relaxed);
  }

  std::vector<task> tasks;
  std::unique_ptr<std::atomic<std::uint32_t>[]> taken;
  std::atomic<std::size_t> count{0};
};

/// `pushers` threads push their share of `l` (or stop at the first refusal once the queue is
/// closed); `poppers` threads take batches until every accepted task is taken. With
/// `close_after` > 0 the main thread closes the queue once that many tasks were taken.
/// Returns how many pushes each pusher had accepted.
template <std::size_t BlockSize>
auto run_round(ledger& l, std::size_t pushers, std::size_t poppers, std::size_t close_after)
    -> std::vector<std::size_t> {
  basic_injector<BlockSize> q;
  std::vector<std::size_t> accepted(pushers, 0);
  std::atomic<std::size_t> pushers_done{0};
  std::latch start(pushers + poppers + 1);
  std::vector<std::thread> threads;
  for (std::size_t p = 0; p < pushers; ++p) {
    threads.emplace_back([&, p] {
      start.arrive_and_wait();
      for (std::size_t i = 0; i < per_pusher; ++i) {
        if (!q.push(&l.tasks[p * per_pusher + i])) {
          break;
        }
        ++accepted[p];
      }
      pushers_done.fetch_add(1, std::memory_order_release);
    });
  }
  for (std::size_t c = 0; c < poppers; ++c) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      for (;;) {
        if (task* t = q.pop_batch(poppers, 16, [&](task* more) noexcept { l.take(more); })) {
          l.take(t);
        } else if (pushers_done.load(std::memory_order_acquire) == pushers) {
          // Every push has returned: one more look finds anything they left.
          while (task* rest = q.pop_batch(1, 16, [&](task* more) noexcept { l.take(more); })) {
            l.take(rest);
          }
          return;
        } else {
          std::this_thread::yield();
        }
      }
    });
  }
  start.arrive_and_wait();
  if (close_after > 0) {
    while (l.count.load(std::memory_order_relaxed) < close_after) {
      std::this_thread::yield();
    }
    q.close();
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_TRUE(q.looks_empty());
  return accepted;
}

}  // namespace

TEST(InjectorStress, ManyPushersAndPoppersAcrossSmallBlocks) {
  // Four pushers and three poppers on two cores, blocks of three slots.
  constexpr std::size_t pushers = 4;
  ledger l(pushers * per_pusher);
  auto const accepted = run_round<3>(l, pushers, 3, 0);
  for (std::size_t p = 0; p < pushers; ++p) {
    EXPECT_EQ(accepted[p], per_pusher);
  }
  for (std::size_t i = 0; i < l.tasks.size(); ++i) {
    ASSERT_EQ(l.taken[i].load(), 1U) << "task " << i;
  }
}

TEST(InjectorStress, CloseWhilePushingKeepsEveryAcceptedTask) {
  // The queue closes mid-stream: each pusher's accepted prefix is taken exactly once, and
  // nothing it was refused is.
  constexpr std::size_t pushers = 3;
  for (int round = 0; round < 4; ++round) {
    ledger l(pushers * per_pusher);
    auto const accepted = run_round<5>(l, pushers, 2, per_pusher / 2);
    for (std::size_t p = 0; p < pushers; ++p) {
      for (std::size_t i = 0; i < per_pusher; ++i) {
        ASSERT_EQ(l.taken[p * per_pusher + i].load(), i < accepted[p] ? 1U : 0U)
            << "pusher " << p << " task " << i << " round " << round;
      }
    }
  }
}
