// Tests for spindle/detail/executor/injector.hpp: the executor's injection queue of task pointers,
// stored in recycled blocks with a lock per end. Order, batch sizes, block boundaries (also
// with tiny blocks, pushing and popping interleaved), close, and concurrent pushers and
// poppers (every task taken exactly once).
#include <spindle/detail/executor/injector.hpp>
#include <spindle/detail/executor/task.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <latch>
#include <thread>
#include <vector>

using spindle::detail::basic_injector;
using spindle::detail::injector;
using spindle::detail::task;

namespace {

void no_op(task* /*unused*/) noexcept {}

auto make_tasks(std::size_t n) -> std::vector<task> {
  return std::vector<task>(n, task(&no_op));
}

}  // namespace

TEST(Injector, Example) {
  injector q;
  auto tasks = make_tasks(3);
  for (auto& t : tasks) {
    ASSERT_TRUE(q.push(&t));
  }
  // A batch: the first task is returned, the rest go to the sink, oldest first.
  std::vector<task*> rest;
  task* first = q.pop_batch(1, 8, [&](task* t) noexcept { rest.push_back(t); });
  EXPECT_EQ(first, &tasks[0]);
  ASSERT_EQ(rest.size(), 2U);
  EXPECT_EQ(rest[0], &tasks[1]);
  EXPECT_EQ(rest[1], &tasks[2]);
  EXPECT_TRUE(q.looks_empty());
  EXPECT_EQ(q.pop(), nullptr);
}

TEST(Injector, FifoAcrossBlocks) {
  injector q;
  auto tasks = make_tasks(5 * injector::block_size + 7);
  for (auto& t : tasks) {
    ASSERT_TRUE(q.push(&t));
  }
  for (auto& t : tasks) {
    ASSERT_EQ(q.pop(), &t);
  }
  EXPECT_EQ(q.pop(), nullptr);
}

TEST(Injector, BatchTakesAShareAndAtMostMax) {
  injector q;
  auto tasks = make_tasks(100);
  for (auto& t : tasks) {
    ASSERT_TRUE(q.push(&t));
  }
  std::size_t taken = 0;
  // 100 / 4 + 1 = 26 tasks for one of four workers.
  ASSERT_NE(q.pop_batch(4, 64, [&](task*) noexcept { ++taken; }), nullptr);
  EXPECT_EQ(taken + 1, 26U);
  taken = 0;
  // At most `max`.
  ASSERT_NE(q.pop_batch(1, 10, [&](task*) noexcept { ++taken; }), nullptr);
  EXPECT_EQ(taken + 1, 10U);
  taken = 0;
  // Never more than max_batch.
  ASSERT_NE(q.pop_batch(1, 1000, [&](task*) noexcept { ++taken; }), nullptr);
  EXPECT_EQ(taken + 1, 64U);
  while (q.pop() != nullptr) {
  }
  EXPECT_TRUE(q.looks_empty());
}

TEST(Injector, ReusedAfterDrainingAndRefilling) {
  injector q;
  auto tasks = make_tasks(3 * injector::block_size);
  for (int round = 0; round < 4; ++round) {
    for (auto& t : tasks) {
      ASSERT_TRUE(q.push(&t));
    }
    for (auto& t : tasks) {
      ASSERT_EQ(q.pop(), &t) << "round " << round;
    }
  }
  EXPECT_TRUE(q.looks_empty());
}

TEST(Injector, InterleavedPushAndPopWithTinyBlocks) {
  // Blocks of three slots: the pushing end keeps allocating or reusing the spare block while
  // the popping end retires blocks behind it; the order stays FIFO throughout.
  basic_injector<3> q;
  auto tasks = make_tasks(50);
  std::size_t next_out = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    ASSERT_TRUE(q.push(&tasks[i]));
    if (i % 3 == 2) {
      // Take two of every three, so the queue grows slowly across blocks.
      ASSERT_EQ(q.pop(), &tasks[next_out++]);
      ASSERT_EQ(q.pop(), &tasks[next_out++]);
    }
  }
  EXPECT_FALSE(q.looks_empty());
  // Batches: the first task is returned, the later ones go to the sink, all in FIFO order.
  std::vector<task*> out;
  for (;;) {
    std::vector<task*> later;
    task* const first = q.pop_batch(1, 4, [&](task* more) noexcept { later.push_back(more); });
    if (first == nullptr) {
      break;
    }
    out.push_back(first);
    out.insert(out.end(), later.begin(), later.end());
  }
  ASSERT_EQ(next_out + out.size(), tasks.size());
  for (std::size_t k = 0; k < out.size(); ++k) {
    EXPECT_EQ(out[k], &tasks[next_out + k]);
  }
  EXPECT_TRUE(q.looks_empty());
}

TEST(Injector, CloseRefusesLaterPushes) {
  injector q;
  auto tasks = make_tasks(2);
  ASSERT_TRUE(q.push(&tasks[0]));
  q.close();
  EXPECT_FALSE(q.push(&tasks[1]));
  // What was accepted before the close is still there.
  EXPECT_EQ(q.pop(), &tasks[0]);
  EXPECT_EQ(q.pop(), nullptr);
}

TEST(Injector, ConcurrentPushersAndPoppersTakeEachTaskOnce) {
  // Three pushers and three poppers on two cores; every task is taken exactly once.
  constexpr std::size_t pushers = 3;
  constexpr std::size_t poppers = 3;
#if defined(SPINDLE_TSAN)
  constexpr std::size_t per = 3'000;
#else
  constexpr std::size_t per = 30'000;
#endif
  injector q;
  auto tasks = make_tasks(pushers * per);
  std::vector<std::atomic<int>> seen(tasks.size());
  std::atomic<std::size_t> taken{0};
  std::latch start(pushers + poppers);
  std::vector<std::thread> threads;
  for (std::size_t p = 0; p < pushers; ++p) {
    threads.emplace_back([&, p] {
      start.arrive_and_wait();
      for (std::size_t i = 0; i < per; ++i) {
        ASSERT_TRUE(q.push(&tasks[p * per + i]));
      }
    });
  }
  auto mark = [&](task* t) noexcept {
    seen[static_cast<std::size_t>(t - tasks.data())].fetch_add(1, std::memory_order_relaxed);
    taken.fetch_add(1, std::memory_order_relaxed);
  };
  for (std::size_t c = 0; c < poppers; ++c) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      while (taken.load(std::memory_order_relaxed) < tasks.size()) {
        if (task* t = q.pop_batch(poppers, 32, mark)) {
          mark(t);
        } else {
          std::this_thread::yield();
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  for (auto const& s : seen) {
    ASSERT_EQ(s.load(), 1);
  }
}
