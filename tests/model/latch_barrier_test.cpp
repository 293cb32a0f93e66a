// spindle::latch and spindle::barrier (the phase gate of detail/sync/phase_gate.hpp) under the
// model checker, on the real code. What each execution checks:
//   - happens-before: parties write plain words the race detector sees before they count down
//     or arrive; a wait that completes reads them, and so does a barrier's completion function,
//     whose own plain write every released waiter of its phase reads. A count_down, arrival or
//     opening that does not publish those writes is reported as a data race;
//   - exactly once: a barrier's completion runs once per phase, before anyone of the phase is
//     released, and a waiter of phase k is released by phase k, never by a later one (its read
//     of the phase counter sees exactly k + 1 completions);
//   - no lost wake-up: a waiter left asleep once its latch opened or its phase completed is a
//     deadlock the checker reports;
//   - nothing left behind: a wait that ended early (its deadline, another case of its select)
//     leaves no entry queued, and the barrier goes on to the next phase.
// Timed waits use a deadline real time never reaches: under the checker a timeout happens only
// when the scheduler chooses it, anywhere in the wait. The seeded bugs of this protocol are
// mutants of the real code (`latch-*`, `barrier-*`, `phase-gate-*` in tools/mutate/mutants.txt)
// that these tests kill.
#include <spindle/async.hpp>
#include <spindle/barrier.hpp>
#include <spindle/latch.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle_test::budget;
using spindle_test::explore_and_report;
using spindle_test::explore_three;

namespace {

constexpr auto long_wait = std::chrono::hours(1);

/// A latch of 2: one thread counts down, one waits with a deadline the checker may let pass,
/// and the body counts down and waits. Every wait that completes sees both parties' writes.
void latch_body() {
  spindle::latch l(2);
  model::plain<int> first;
  model::plain<int> second;
  model::thread a([&] {
    first.set(1);
    l.count_down();
  });
  model::thread b([&] {
    if (l.wait_for(long_wait)) {
      model::check(first.get() == 1 && second.get() == 1, "a wait completed before the count");
    }
  });
  second.set(1);
  l.arrive_and_wait();
  model::check(first.get() == 1, "arrive_and_wait returned before the count reached zero");
  a.join();
  b.join();
  model::check(l.try_wait(), "the latch is open after both count_downs");
  model::check(l.waiting() == 0, "a wait left an entry queued");
}

/// Two waiters on a latch of 1, one in a select beside a timeout: the count_down completes the
/// plain wait and either completes the select or finds it timed out; a later wait passes at once.
void latch_select_body() {
  spindle::latch l(1);
  model::plain<int> payload;
  model::thread opener([&] {
    payload.set(7);
    l.count_down();
  });
  model::thread waiter([&] {
    l.wait();
    model::check(payload.get() == 7, "a wait completed before the count_down");
  });
  int completed = 0;
  auto const i = spindle::select(spindle::on_counted_down(l,
                                                          [&] {
                                                            ++completed;
                                                            model::check(payload.get() == 7,
                                                                         "the select completed "
                                                                         "before the count_down");
                                                          }),
                                 spindle::on_timeout(long_wait, [&] { ++completed; }));
  opener.join();
  waiter.join();
  model::check(completed == 1, "a select must complete exactly one case");
  model::check(i == 0 || i == 1, "a select chose no case");
  model::check(l.waiting() == 0, "a wait left an entry queued");
  l.wait();
}

/// The phase counter of a barrier's completion and the words it publishes.
struct phases {
  model::plain<int> published;            // written by the completion, read by released waiters
  spindle::detail::atomic<int> count{0};  // completions so far
  model::plain<int> party[3];             // each party's write before its arrival
};

/// A barrier of 2 over two phases: party A arrives and waits late (slow to wake: the checker may
/// run B far ahead), B waits with deadlines it resumes with the same token. The completion runs
/// once per phase, sees both arrivals, and each waiter is released by its own phase.
void barrier_body() {
  phases p;
  auto completion = [&p]() noexcept {
    static_cast<void>(p.party[0].get());
    static_cast<void>(p.party[1].get());
    p.published.set(p.published.get() + 1);
    p.count.fetch_add(1, std::memory_order_relaxed);
  };
  spindle::barrier b(2, completion);
  model::thread slow([&] {
    for (int phase = 0; phase < 2; ++phase) {
      p.party[0].set(phase);
      auto const t = b.arrive();
      b.wait(t);
      model::check(p.count.load(std::memory_order_relaxed) == phase + 1,
                   "a waiter was released by another phase than its own");
      model::check(p.published.get() == phase + 1, "released before the completion ran");
    }
  });
  for (int phase = 0; phase < 2; ++phase) {
    p.party[1].set(phase);
    auto const t = b.arrive();
    while (!b.wait_until(t, std::chrono::steady_clock::now() + long_wait)) {
      // Timed out: the arrival stays counted; wait again with the same token.
    }
    model::check(p.count.load(std::memory_order_relaxed) == phase + 1,
                 "a waiter was released by another phase than its own");
    model::check(p.published.get() == phase + 1, "released before the completion ran");
  }
  slow.join();
  model::check(p.count.load(std::memory_order_relaxed) == 2, "a completion ran twice or never");
  model::check(b.waiting() == 0, "a wait left an entry queued");
}

/// A barrier of 3 where one party drops after its first arrival: the first phase needs three
/// arrivals, the second two. One waiter uses a select beside a timeout.
void barrier_drop_body() {
  spindle::detail::atomic<int> completions{0};
  model::plain<int> published;
  auto completion = [&]() noexcept {
    published.set(published.get() + 1);
    completions.fetch_add(1, std::memory_order_relaxed);
  };
  spindle::barrier b(3, completion);
  model::thread dropper([&] { b.arrive_and_drop(); });
  model::thread other([&] {
    b.arrive_and_wait();
    model::check(published.get() == 1, "released before the completion ran");
    auto const t = b.arrive();
    static_cast<void>(spindle::select(spindle::on_phase_completed(b, t, [] {}),
                                      spindle::on_timeout(long_wait, [] {})));
    b.wait(t);
  });
  b.arrive_and_wait();
  model::check(completions.load(std::memory_order_relaxed) == 1, "phase 0 completed twice");
  b.arrive_and_wait();
  model::check(published.get() == 2, "released before the second completion ran");
  dropper.join();
  other.join();
  model::check(completions.load(std::memory_order_relaxed) == 2, "a completion ran twice or never");
  model::check(b.waiting() == 0, "a wait left an entry queued");
}

/// A coroutine (run by sync_wait) and a thread are the two parties of a barrier over two
/// phases; then the coroutine waits on a latch the thread opens. The coroutine's waits are the
/// select awaiter on the same gate: resumed once per phase, after that phase's completion.
void coroutine_body() {
  spindle::detail::atomic<int> completions{0};
  model::plain<int> published;
  auto completion = [&]() noexcept {
    published.set(published.get() + 1);
    completions.fetch_add(1, std::memory_order_relaxed);
  };
  spindle::barrier b(2, completion);
  spindle::latch l(1);
  model::plain<int> done;
  model::thread t([&] {
    for (int phase = 0; phase < 2; ++phase) {
      b.arrive_and_wait();
      model::check(published.get() == phase + 1, "released before the completion ran");
    }
    done.set(1);
    l.count_down();
  });
  spindle::sync_wait([](auto& bar, spindle::latch& lat, model::plain<int>& pub,
                        model::plain<int>& fin) -> spindle::task<> {
    for (int phase = 0; phase < 2; ++phase) {
      co_await bar.async_arrive_and_wait();
      model::check(pub.get() == phase + 1, "a coroutine resumed before the completion ran");
    }
    co_await lat.async_wait();
    model::check(fin.get() == 1, "a coroutine resumed before the count_down");
  }(b, l, published, done));
  t.join();
  model::check(completions.load(std::memory_order_relaxed) == 2, "a completion ran twice or never");
}

}  // namespace

TEST(ModelLatchBarrier, LatchCountDownAndWaits) {
  explore_three("latch(2): count_down, wait_for, arrive_and_wait", 81, 2000, latch_body);
  explore_and_report("latch: dfs bound 2", model::exhaustive(2, budget(20000)), latch_body);
}

TEST(ModelLatchBarrier, LatchSelectAndTimeout) {
  explore_three("latch(1): wait, select with a timeout", 91, 2000, latch_select_body);
}

TEST(ModelLatchBarrier, BarrierSlowWaiterIsReleasedByItsOwnPhase) {
  explore_three("barrier(2): two phases, a late waiter, resumed timed waits", 101, 2000,
                barrier_body);
  explore_and_report("barrier: dfs bound 2", model::exhaustive(2, budget(20000)), barrier_body);
}

TEST(ModelLatchBarrier, BarrierDropAndSelect) {
  explore_three("barrier(3): arrive_and_drop, select with a timeout", 111, 2000, barrier_drop_body);
}

TEST(ModelLatchBarrier, CoroutineAndThreadShareABarrierAndALatch) {
  explore_three("barrier(2) and latch(1): a coroutine and a thread", 121, 2000, coroutine_body);
}
