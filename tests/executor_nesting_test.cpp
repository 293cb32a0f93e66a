// Fork-join nested across executors (spindle/executor.hpp, detail::run_as_root): a worker of
// one executor that calls a parallel algorithm or join on another takes a guest slot there,
// and when every slot is taken it waits for one (executor_core::enter_guest_waiting()) rather
// than queueing its root for workers that may be waiting for it. An application nests pools
// this way: an I/O pool calls a compute pool, whose tasks call back.

#include <spindle/executor.hpp>
#include <spindle/parallel.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>

#include "support/receipts.hpp"

namespace {

using namespace std::chrono_literals;

/// Runs `scenario` on its own thread; aborts with a message when it hangs (a deadlocked
/// executor cannot be recovered).
template <class Scenario>
void finishes(Scenario scenario, char const* what) {
  std::atomic<bool> done{false};
  std::thread runner([&] {
    scenario();
    done.store(true);
  });
  spindle_test::wait_until([&] { return done.load(); }, std::chrono::seconds(60), what);
  runner.join();
}

}  // namespace

// A's only worker runs parallel_for on B (four workers), whose body runs parallel_for on A
// again, with a slow body so that every guest slot of A is taken while B's workers call it.
// It used to hang every time: a worker of B that found A's slots taken queued its loop on A
// and slept, and A's only worker slept in B waiting for it.
TEST(ExecutorNesting, ParallelForAcrossTwoExecutorsAndBack) {
  finishes(
      [] {
        spindle::executor a{1};
        spindle::executor b{4};
        std::atomic<std::int64_t> inner{0};
        a.spawn([&] {
           spindle::parallel_for(b, 0, 16, 1, [&](int) {
             spindle::parallel_for(a, 0, 4, 1, [&](int j) {
               std::this_thread::sleep_for(200us);
               inner.fetch_add(j);
             });
           });
         }).join();
        EXPECT_EQ(inner.load(), 16 * 6);
      },
      "parallel_for nested across two executors");
}

// The same with join, from the other side: B's workers join on A while A's worker waits in B,
// many times over, so that slot hand-overs race the waiters.
TEST(ExecutorNesting, JoinAcrossTwoExecutorsAndBack) {
  finishes(
      [] {
        for (int rep = 0; rep < 20; ++rep) {
          spindle::executor a{1};
          spindle::executor b{3};
          std::atomic<int> leaves{0};
          a.spawn([&] {
             spindle::parallel_for(b, 0, 8, 1, [&](int) {
               auto [x, y] = spindle::join(
                   a, [&] { return leaves.fetch_add(1) >= 0 ? 1 : 0; },
                   [&] { return leaves.fetch_add(1) >= 0 ? 1 : 0; });
               EXPECT_EQ(x + y, 2);
             });
           }).join();
          ASSERT_EQ(leaves.load(), 16);
        }
      },
      "join nested across two executors");
}

// More of B's workers call A at once than A has guest slots: each gets one in turn, every body
// runs once, and none is refused.
TEST(ExecutorNesting, MoreCallersThanSlots) {
  finishes(
      [] {
        spindle::executor a{1};
        spindle::executor b{3};
        std::atomic<int> refused{0};
        std::atomic<int> ran{0};
        a.spawn([&] {
           spindle::parallel_for(b, 0, 6, 1, [&](int) {
             try {
               spindle::parallel_for(a, 0, 2, 1, [&](int) {
                 std::this_thread::sleep_for(1ms);
                 ran.fetch_add(1);
               });
             } catch (std::logic_error const&) {
               refused.fetch_add(1);
             }
           });
         }).join();
        EXPECT_EQ(refused.load(), 0);
        EXPECT_EQ(ran.load(), 12);
      },
      "slot waiters and shutdown");
}
