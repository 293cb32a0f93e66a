// Tests for spindle::barrier (barrier.hpp): std::barrier semantics (arrive, wait,
// arrive_and_wait, arrive_and_drop, a completion function run once per phase before anyone of
// the phase is released), many phases with threads and coroutines mixed, waits that end early
// and resume with the same token, the select case, and misuse.

#include <spindle/async.hpp>
#include <spindle/barrier.hpp>
#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
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

TEST(Barrier, Example) {
  // Four parties step a double buffer; the completion swaps it once per phase, while every
  // party waits.
  std::vector<int> front(4, 0);
  std::vector<int> back(4, 0);
  int phases = 0;
  spindle::barrier sync(4, [&]() noexcept {
    front.swap(back);
    ++phases;
  });
  std::vector<std::thread> parties;
  for (std::size_t i = 0; i < 4; ++i) {
    parties.emplace_back([&, i] {
      for (int step = 0; step < 10; ++step) {
        back[i] = front[i] + 1;
        sync.arrive_and_wait();
      }
    });
  }
  for (auto& t : parties) {
    t.join();
  }
  EXPECT_EQ(phases, 10);
  EXPECT_EQ(front, std::vector<int>(4, 10));
}

TEST(Barrier, ArriveReturnsATokenOfThePhase) {
  spindle::barrier b(2);
  auto t0 = b.arrive();
  EXPECT_EQ(t0.phase(), 0U);
  EXPECT_FALSE(b.wait_for(t0, 1ms));
  auto t1 = b.arrive();  // completes phase 0
  EXPECT_EQ(t1.phase(), 0U);
  b.wait(t0);
  b.wait(t1);
  auto t2 = b.arrive(2);  // one call may count for several parties
  EXPECT_EQ(t2.phase(), 1U);
  b.wait(t2);
  EXPECT_EQ(b.arrive().phase(), 2U);
}

TEST(Barrier, CompletionRunsOncePerPhaseBeforeAnyoneIsReleased) {
  constexpr int parties = 5;
  constexpr int rounds = 200;
  std::atomic<int> arrived{0};
  std::atomic<int> completions{0};
  std::atomic<bool> bad{false};
  spindle::barrier b(parties, [&]() noexcept {
    // Every party of this phase arrived, and nobody of it was released yet.
    if (arrived.load() != parties * (completions.load() + 1)) {
      bad = true;
    }
    completions.fetch_add(1);
  });
  std::vector<std::thread> ts;
  for (int i = 0; i < parties; ++i) {
    ts.emplace_back([&] {
      for (int r = 0; r < rounds; ++r) {
        arrived.fetch_add(1);
        b.arrive_and_wait();
        if (completions.load() < r + 1) {
          bad = true;
        }
      }
    });
  }
  for (auto& t : ts) {
    t.join();
  }
  EXPECT_FALSE(bad.load());
  EXPECT_EQ(completions.load(), rounds);
}

TEST(Barrier, ArriveAndDropLowersLaterPhases) {
  int completions = 0;
  spindle::barrier b(3, [&]() noexcept { ++completions; });
  auto t = b.arrive();
  b.arrive_and_drop();
  EXPECT_EQ(completions, 0);
  auto t2 = b.arrive();  // the third arrival completes phase 0
  EXPECT_EQ(completions, 1);
  b.wait(t);
  b.wait(t2);
  // Phase 1 expects two.
  auto t3 = b.arrive();
  EXPECT_EQ(completions, 1);
  b.arrive_and_drop();
  EXPECT_EQ(completions, 2);
  b.wait(t3);
  // Phase 2 expects one.
  b.arrive_and_wait();
  EXPECT_EQ(completions, 3);
  b.arrive_and_drop();  // the last party leaves
  EXPECT_EQ(completions, 4);
  EXPECT_THROW(static_cast<void>(b.arrive()), std::logic_error);
}

TEST(Barrier, ATimedOutWaitKeepsTheArrivalAndResumesWithTheToken) {
  spindle::barrier b(2);
  auto const t = b.arrive();
  EXPECT_FALSE(b.wait_for(t, 1ms));
  std::stop_source source;
  source.request_stop();
  EXPECT_FALSE(b.wait(t, source.get_token()));
  EXPECT_FALSE(b.wait_until(t, std::chrono::system_clock::now() + 1ms));
  EXPECT_EQ(b.waiting(), 0U);
  // The arrival still counts: one more completes the phase.
  std::thread other([&] { b.arrive_and_wait(); });
  b.wait(t);
  other.join();
  // A completed phase wins over a stop already requested and an expired deadline.
  EXPECT_TRUE(b.wait(t, source.get_token()));
  EXPECT_TRUE(b.wait_until(t, std::chrono::steady_clock::now() - 1s));
}

TEST(Barrier, AnAbandonedTokenLetsThePhaseComplete) {
  spindle::barrier b(2);
  static_cast<void>(b.arrive());  // the token is abandoned
  b.arrive_and_wait();
  auto const t = b.arrive();
  EXPECT_EQ(t.phase(), 1U);
}

TEST(Barrier, ASlowWaiterOfAPhaseIsReleasedByThatPhase) {
  // Party A arrives in phase 0 and waits only later; meanwhile the others complete phase 0 and
  // start phase 1. A's wait for phase 0 returns at once; a wait for phase 1 does not.
  spindle::barrier b(2);
  auto const a0 = b.arrive();
  auto const b0 = b.arrive();
  auto const b1 = b.arrive();  // phase 1 started: one of two arrived
  EXPECT_EQ(b1.phase(), 1U);
  EXPECT_TRUE(b.wait_for(a0, 0ms));
  b.wait(b0);
  EXPECT_FALSE(b.wait_for(b1, 1ms));
  auto const a1 = b.arrive();
  EXPECT_TRUE(b.wait_for(b1, 0ms));
  EXPECT_TRUE(b.wait_for(a1, 0ms));
}

TEST(Barrier, MayBeDestroyedOnceEveryPartyReturned) {
  // The arrival that completes the last phase may still be returning when the other parties
  // are released and the barrier is destroyed (its last access came before their waits ended).
  // A sanitizer build reports a use after free if that ever breaks.
  for (int i = 0; i < 500; ++i) {
    auto b = std::make_unique<spindle::barrier<>>(2);
    auto const t = b->arrive();
    std::thread last([p = b.get()] { static_cast<void>(p->arrive()); });
    b->wait(t);
    b.reset();
    last.join();
  }
}

TEST(Barrier, ThreadsAndCoroutinesMixedOverManyPhases) {
  constexpr int threads = 3;
  constexpr int coros = 5;
  constexpr int rounds = 100;
  spindle::executor ex(2);
  std::atomic<int> completions{0};
  std::atomic<int> arrived{0};
  std::atomic<bool> bad{false};
  spindle::barrier b(threads + coros, [&]() noexcept {
    if (arrived.load() != (threads + coros) * (completions.load() + 1)) {
      bad = true;
    }
    completions.fetch_add(1);
  });
  std::vector<spindle::join_handle<void>> handles;
  for (int i = 0; i < coros; ++i) {
    handles.push_back(ex.spawn([](auto& bar, std::atomic<int>& arr, std::atomic<int>& done,
                                  std::atomic<bool>& wrong) -> spindle::task<> {
      for (int r = 0; r < rounds; ++r) {
        arr.fetch_add(1);
        co_await bar.async_arrive_and_wait();
        if (done.load() != r + 1) {
          wrong = true;
        }
      }
    }(b, arrived, completions, bad)));
  }
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i) {
    ts.emplace_back([&] {
      for (int r = 0; r < rounds; ++r) {
        arrived.fetch_add(1);
        if (r % 2 == 0) {
          b.arrive_and_wait();
        } else {
          auto const t = b.arrive();
          // A timed wait that may end early, resumed with the same token.
          while (!b.wait_for(t, 50us)) {
          }
        }
        if (completions.load() != r + 1) {
          bad = true;
        }
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
}

TEST(Barrier, CoroutineFormsTimeOutStopAndComplete) {
  spindle::barrier b(2);
  auto const score = spindle::sync_wait([](auto& bar) -> spindle::task<int> {
    int s = 0;
    auto const t = bar.arrive();
    s += (co_await bar.async_wait_for(t, 2ms)) ? 0 : 1;
    s += (co_await bar.async_wait_until(t, std::chrono::steady_clock::now() + 1ms)) ? 0 : 1;
    std::stop_source st;
    st.request_stop();
    s += (co_await bar.async_wait(t, st.get_token())) ? 0 : 1;
    static_cast<void>(bar.arrive());
    s += (co_await bar.async_wait_for(t, 1h)) ? 1 : 0;
    s += (co_await bar.async_wait(t, st.get_token())) ? 1 : 0;
    co_await bar.async_wait(t);
    co_return s;
  }(b));
  EXPECT_EQ(score, 5);
}

TEST(Barrier, SelectCase) {
  spindle::barrier b(2);
  auto [tx, rx] = spindle::bounded<int>(1);
  auto const t = b.arrive();
  std::thread other([&] { b.arrive_and_wait(); });
  bool completed = false;
  EXPECT_EQ(spindle::select(spindle::on_phase_completed(b, t, [&] { completed = true; }),
                            spindle::on_recv(rx, [](std::optional<int>) {})),
            0U);
  other.join();
  EXPECT_TRUE(completed);
  // Not chosen: the wait leaves nothing queued.
  auto const t1 = b.arrive();
  EXPECT_EQ(
      spindle::select(spindle::on_phase_completed(b, t1, [] {}), spindle::on_timeout(1ms, [] {})),
      1U);
  EXPECT_EQ(b.waiting(), 0U);
  b.arrive_and_wait();
}

TEST(Barrier, MisuseThrowsAndChangesNothing) {
  EXPECT_THROW(spindle::barrier(-1), std::invalid_argument);
  spindle::barrier b(2);
  spindle::barrier other(1);
  EXPECT_THROW(static_cast<void>(b.arrive(0)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(b.arrive(3)), std::logic_error);
  auto const t = b.arrive();
  EXPECT_THROW(static_cast<void>(b.arrive(2)), std::logic_error);
  EXPECT_THROW(other.wait(t), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(spindle::on_phase_completed(other, t, [] {})),
               std::invalid_argument);
  EXPECT_FALSE(b.wait_for(t, 0ms));
  auto const t2 = b.arrive();
  b.wait(t2);
  EXPECT_EQ(spindle::barrier<>::max(), std::numeric_limits<std::ptrdiff_t>::max());
}

/// A completion that runs a hook given after the barrier is built (the hook may name the
/// barrier), catching what it throws.
struct hook_completion {
  std::function<void()>* hook;
  void operator()() const noexcept {
    try {
      (*hook)();
    } catch (std::logic_error const&) {
      std::abort();
    }
  }
};

TEST(Barrier, AnArrivalWhileTheCompletionRunsThrows) {
  std::function<void()> hook;
  spindle::barrier<hook_completion> b(1, hook_completion{&hook});
  int threw = 0;
  hook = [&] {
    try {
      static_cast<void>(b.arrive());
    } catch (std::logic_error const&) {
      ++threw;
    }
  };
  auto const t = b.arrive();
  b.wait(t);
  EXPECT_EQ(threw, 1);
  hook = [] {};
  b.arrive_and_wait();  // the barrier goes on: the failed arrival changed nothing
  EXPECT_EQ(b.arrive().phase(), 2U);
}

}  // namespace
