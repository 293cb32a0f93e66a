// Stress tests for spindle/executor.hpp with more threads than cores: concurrent submission
// from outside and inside, shutdown racing with submission, exactly-once execution, and
// repeated idle/wake cycles.

#include <spindle/executor.hpp>
#include <spindle/task_group.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <latch>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/sizes.hpp"

namespace {

constexpr int scale = spindle_test::tsan_divisor(8);

// One counter per task id: every accepted task must run exactly once.
struct ledger {
  explicit ledger(std::size_t n)
      : runs(std::make_unique<std::atomic<std::uint32_t>[]>(n)), size(n) {}
  std::unique_ptr<std::atomic<std::uint32_t>[]> runs;
  std::size_t size;
  std::atomic<std::uint64_t> next_id{0};

  auto claim() -> std::uint64_t { return next_id.fetch_add(1, std::memory_order_relaxed); }
  void ran(std::uint64_t id) { runs[id].fetch_add(1, std::memory_order_relaxed); }
};

}  // namespace

TEST(ExecutorStress, Example) {
  // Six outside threads and three workers on a two-core machine: every task runs once.
  spindle::executor ex{3};
  std::atomic<int> ran{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 6; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        ex.post([&] { ran.fetch_add(1, std::memory_order_relaxed); });
      }
    });
  }
  for (auto& t : ts) {
    t.join();
  }
  ex.shutdown();
  EXPECT_EQ(ran.load(), 600);
}

TEST(ExecutorStress, OutsideAndInsideSpawnersRunEveryTaskOnce) {
  int const outside = 6;
  int const per_thread = 3000 / scale;
  constexpr int children = 3;
  ledger book(static_cast<std::size_t>(outside * per_thread * (children + 1)));
  {
    spindle::executor ex{4};
    std::latch start(outside);
    std::vector<std::thread> ts;
    for (int t = 0; t < outside; ++t) {
      ts.emplace_back([&] {
        start.arrive_and_wait();
        for (int i = 0; i < per_thread; ++i) {
          auto const id = book.claim();
          ex.post([&ex, &book, id] {
            book.ran(id);
            for (int c = 0; c < children; ++c) {
              auto const cid = book.claim();
              ex.post([&book, cid] { book.ran(cid); });
            }
          });
        }
      });
    }
    for (auto& t : ts) {
      t.join();
    }
  }  // the destructor finishes every accepted task, children included
  auto const claimed = book.next_id.load();
  ASSERT_EQ(claimed, book.size);
  for (std::size_t i = 0; i < claimed; ++i) {
    ASSERT_EQ(book.runs[i].load(), 1U) << "task " << i;
  }
}

TEST(ExecutorStress, ShutdownWhileTasksSpawnTasks) {
  int const rounds = 20 / scale + 1;
  for (int round = 0; round < rounds; ++round) {
    std::atomic<std::uint64_t> accepted{0};
    std::atomic<std::uint64_t> ran{0};
    std::atomic<bool> go{false};
    {
      spindle::executor ex{3};
      // A chain of tasks, each spawning the next from inside, until a depth limit.
      struct chain {
        static void step(spindle::executor& ex, std::atomic<std::uint64_t>& accepted,
                         std::atomic<std::uint64_t>& ran, int depth) {
          ran.fetch_add(1, std::memory_order_relaxed);
          if (depth > 0) {
            accepted.fetch_add(1, std::memory_order_relaxed);
            ex.post([&ex, &accepted, &ran, depth] { step(ex, accepted, ran, depth - 1); });
          }
        }
      };
      std::vector<std::thread> ts;
      for (int t = 0; t < 4; ++t) {
        ts.emplace_back([&] {
          while (!go.load()) {
            std::this_thread::yield();
          }
          for (int i = 0; i < 1000; ++i) {
            try {
              ex.post([&] { chain::step(ex, accepted, ran, 20); });
              accepted.fetch_add(1, std::memory_order_relaxed);
            } catch (std::logic_error const&) {
              return;  // shutdown began: nothing more is accepted from outside
            }
          }
        });
      }
      go.store(true);
      // Let them race for a moment, then shut down while chains are still growing.
      while (accepted.load() < 500) {
        std::this_thread::yield();
      }
      ex.shutdown();
      for (auto& t : ts) {
        t.join();
      }
    }
    ASSERT_EQ(ran.load(), accepted.load()) << "round " << round;
  }
}

TEST(ExecutorStress, RepeatedIdleThenOneOutsideTask) {
  for (std::size_t workers : {1U, 2U, 5U}) {
    spindle::executor ex{workers};
    int const rounds = 400 / scale;
    for (int round = 0; round < rounds; ++round) {
      std::promise<void> ran;
      if (round % 2 == 0) {
        ex.post([&] { ran.set_value(); });
      } else {
        // From a worker that then leaves: the task sits in its deque.
        ex.post([&] { ex.post([&] { ran.set_value(); }); });
      }
      ASSERT_EQ(ran.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready)
          << "workers " << workers << " round " << round;
    }
  }
}

TEST(ExecutorStress, JoinHandlesAcrossThreadsAndGroups) {
  spindle::executor ex{3};
  int const outside = 5;
  int const per = 400 / scale;
  std::atomic<std::int64_t> total{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < outside; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < per; ++i) {
        auto h = ex.spawn([&ex] {
          std::atomic<int> inner{0};
          spindle::task_group g{ex};
          for (int k = 0; k < 4; ++k) {
            g.spawn([&] { inner.fetch_add(1, std::memory_order_relaxed); });
          }
          auto [a, b] = spindle::join(
              ex, [] { return 1; }, [] { return 2; });
          g.wait();
          return inner.load() + a + b;
        });
        total.fetch_add(h.join(), std::memory_order_relaxed);
      }
    });
  }
  for (auto& t : ts) {
    t.join();
  }
  EXPECT_EQ(total.load(), std::int64_t{outside} * per * 7);
}
