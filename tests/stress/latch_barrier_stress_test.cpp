// Stress tests of spindle::latch and spindle::barrier: more parties than cores, threads and
// coroutines mixed, every form of wait (blocking, timed and resumed with the same token, select,
// co_await), thousands of phases, with a completion that checks it runs once per phase while
// every party of that phase has arrived and none has left; and latches created, opened and
// destroyed in a loop while the workers that opened them may still be returning.

#include <spindle/async.hpp>
#include <spindle/barrier.hpp>
#include <spindle/executor.hpp>
#include <spindle/latch.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <thread>
#include <vector>

#include "support/sizes.hpp"

namespace {

using namespace std::chrono_literals;

constexpr int scale = spindle_test::tsan_divisor(10);

TEST(LatchBarrierStress, ThousandsOfPhasesWithEveryFormOfWait) {
  constexpr int threads = 6;
  constexpr int coros = 6;
  constexpr int parties = threads + coros;
  int const rounds = 3000 / scale;
  spindle::executor ex(2);
  std::atomic<int> arrived{0};
  std::atomic<int> completions{0};
  std::atomic<bool> bad{false};
  spindle::barrier b(parties, [&]() noexcept {
    if (arrived.load() != parties * (completions.load() + 1)) {
      bad = true;
    }
    completions.fetch_add(1);
  });
  auto check_phase = [&](int r) {
    if (completions.load() != r + 1) {
      bad = true;
    }
  };
  std::vector<spindle::join_handle<void>> handles;
  for (int i = 0; i < coros; ++i) {
    handles.push_back(ex.spawn(
        [](auto& bar, std::atomic<int>& arr, int n, int id, auto& check) -> spindle::task<> {
          for (int r = 0; r < n; ++r) {
            arr.fetch_add(1);
            if ((r + id) % 2 == 0) {
              co_await bar.async_arrive_and_wait();
            } else {
              auto const t = bar.arrive();
              while (!(co_await bar.async_wait_for(t, 100us))) {
              }
            }
            check(r);
          }
        }(b, arrived, rounds, i, check_phase)));
  }
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i) {
    ts.emplace_back([&, i] {
      for (int r = 0; r < rounds; ++r) {
        arrived.fetch_add(1);
        switch ((r + i) % 3) {
          case 0:
            b.arrive_and_wait();
            break;
          case 1: {
            auto const t = b.arrive();
            while (!b.wait_for(t, 50us)) {
            }
            break;
          }
          default: {
            auto const t = b.arrive();
            while (spindle::select(spindle::on_phase_completed(b, t, [] {}),
                                   spindle::on_timeout(20us, [] {})) != 0) {
            }
            break;
          }
        }
        check_phase(r);
      }
    });
  }
  for (auto& t : ts) {
    t.join();
  }
  for (auto& h : handles) {
    h.join();
  }
  EXPECT_FALSE(bad.load());
  EXPECT_EQ(completions.load(), rounds);
  EXPECT_EQ(b.waiting(), 0U);
}

TEST(LatchBarrierStress, LatchesOpenedAndDestroyedInALoop) {
  // Each round: a latch on the heap, four threads count it down, two more threads and a
  // coroutine wait on it; the owner waits too and destroys it once every waiter returned,
  // while the count_downs may still be returning (a sanitizer build sees any late access).
  int const rounds = 400 / scale;
  spindle::executor ex(2);
  for (int r = 0; r < rounds; ++r) {
    auto l = std::make_unique<spindle::latch>(4);
    std::atomic<int> through{0};
    std::vector<std::thread> ts;
    for (int i = 0; i < 2; ++i) {
      ts.emplace_back([p = l.get(), &through] {
        p->wait();
        through.fetch_add(1);
      });
    }
    auto h = ex.spawn([](spindle::latch& x, std::atomic<int>& t) -> spindle::task<> {
      co_await x.async_wait();
      t.fetch_add(1);
    }(*l, through));
    std::vector<std::thread> openers;
    for (int i = 0; i < 4; ++i) {
      openers.emplace_back([p = l.get()] { p->count_down(); });
    }
    l->wait();
    for (auto& t : ts) {
      t.join();
    }
    h.join();
    EXPECT_EQ(through.load(), 3);
    l.reset();
    for (auto& t : openers) {
      t.join();
    }
  }
}

}  // namespace
