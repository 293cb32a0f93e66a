// The operation matrix of spindle::latch and spindle::barrier (the phase gate of
// detail/sync/phase_gate.hpp): every operation against every other and itself, under the model
// checker (tests/support/op_matrix.hpp). Each fixture is built so that both operations can
// finish on their own; a thread left asleep is a lost wake-up (a deadlock the checker reports),
// a plain write not published by a count_down, an arrival or a completion is a data race, and
// finish() checks that the latch is open, that each phase completed exactly once and that no
// wait left an entry queued.
#include <spindle/barrier.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/latch.hpp>
#include <spindle/model/atomic.hpp>
#include <spindle/select.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "support/op_matrix.hpp"

namespace model = spindle::model;
namespace detail = spindle::detail;
using spindle_test::operation;

namespace {

/// A deadline real time never reaches during a test: under the checker a timed wait times out
/// only when the scheduler chooses (virtual time), so the schedule alone decides.
auto later() -> detail::steady_time {
  return detail::steady_time::clock::now() + std::chrono::hours(1);
}

// ---------------------------------------------------------------------------------------------
// Latch: its count is the number of operations in the pair that count down (count_down,
// arrive_and_wait), so both can finish; a pair of waits gets an open latch. A counting side
// writes its plain word before it counts down; a wait that completes reads the words of every
// counting side.

auto counts(std::string_view name) -> bool {
  return name == "count_down" || name == "arrive_and_wait";
}

struct latch_fixture {
  bool counting[2];
  spindle::latch l;
  model::plain<int> payload[2];

  latch_fixture(std::string_view a, std::string_view b)
      : counting{counts(a), counts(b)}, l((counts(a) ? 1 : 0) + (counts(b) ? 1 : 0)) {}

  void count(int side) {
    payload[side].set(side + 1);
    l.count_down();
  }
  void passed() {
    for (int side = 0; side < 2; ++side) {
      if (counting[side]) {
        model::check(payload[side].get() == side + 1, "a wait completed before the count");
      }
    }
  }

  void finish() {
    model::check(l.try_wait(), "the latch is not open after every count_down");
    model::check(l.waiting() == 0, "a wait left an entry queued");
    model::check(!l.waiting_at_quiescence(), "a waiter still waits on an open latch");
    passed();
  }
};

auto latch_ops() -> std::vector<operation<latch_fixture>> const& {
  static std::vector<operation<latch_fixture>> const ops{
      {"count_down", [](latch_fixture& f, int side) { f.count(side); }},
      {"arrive_and_wait",
       [](latch_fixture& f, int side) {
         f.payload[side].set(side + 1);
         f.l.arrive_and_wait();
         f.passed();
       }},
      {"wait",
       [](latch_fixture& f, int) {
         f.l.wait();
         f.passed();
       }},
      // A deadline the checker may let pass at any point.
      {"wait_for",
       [](latch_fixture& f, int) {
         if (f.l.wait_until(later())) {
           f.passed();
         }
       }},
      {"select",
       [](latch_fixture& f, int) {
         if (spindle::select(spindle::on_counted_down(f.l, [] {}),
                             spindle::on_deadline(later(), [] {})) == 0) {
           f.passed();
         }
       }},
      {"try_wait",
       [](latch_fixture& f, int) {
         if (f.l.try_wait()) {
           f.passed();
         }
       }},
  };
  return ops;
}

SPINDLE_OPERATION_MATRIX(LatchPairs, latch_fixture, latch_ops(), spindle_test::pair_schedules(300));

// ---------------------------------------------------------------------------------------------
// Barrier of 2: each operation arrives once in phase 0, after writing its plain word. The
// completion reads both words and writes its own; every wait that completes reads it and finds
// exactly one completion. finish() then drives phase 1 with the parties left (none after two
// drops: then an arrival is misuse) and checks it completed once more.

struct barrier_fixture {
  struct completion {
    barrier_fixture* f;
    void operator()() const noexcept { f->complete(); }
  };

  model::plain<int> payload[2];
  model::plain<int> published;
  detail::atomic<int> completions{0};
  int drops = 0;
  spindle::barrier<completion> b{2, completion{this}};

  barrier_fixture(std::string_view a, std::string_view b_name)
      : drops((a == "arrive_and_drop" ? 1 : 0) + (b_name == "arrive_and_drop" ? 1 : 0)) {}

  void complete() {
    static_cast<void>(payload[0].get());
    static_cast<void>(payload[1].get());
    published.set(published.get() + 1);
    completions.fetch_add(1, std::memory_order_relaxed);
  }
  auto arrive(int side) -> spindle::barrier<completion>::arrival_token {
    payload[side].set(side + 1);
    return b.arrive();
  }
  void passed() {
    model::check(completions.load(std::memory_order_relaxed) == 1,
                 "a wait was released by another phase than its own");
    model::check(published.get() == 1, "a wait was released before the completion ran");
  }

  void finish() {
    model::check(completions.load(std::memory_order_relaxed) == 1, "phase 0 completed twice");
    model::check(b.waiting() == 0, "a wait left an entry queued");
    model::check(!b.waiting_at_quiescence(), "a waiter still waits for a completed phase");
    int const left = 2 - drops;
    if (left == 0) {
      bool threw = false;
      try {
        static_cast<void>(b.arrive());
      } catch (std::logic_error const&) {
        threw = true;
      }
      model::check(threw, "an arrival after every party dropped was accepted");
      return;
    }
    for (int i = 0; i < left; ++i) {
      static_cast<void>(b.arrive());
    }
    model::check(completions.load(std::memory_order_relaxed) == 2, "phase 1 did not complete once");
  }
};

auto barrier_ops() -> std::vector<operation<barrier_fixture>> const& {
  static std::vector<operation<barrier_fixture>> const ops{
      {"arrive_and_wait",
       [](barrier_fixture& f, int side) {
         f.payload[side].set(side + 1);
         f.b.arrive_and_wait();
         f.passed();
       }},
      // Arrives, then waits once with a deadline the checker may let pass: the token is then
      // abandoned and the phase completes without this party waiting.
      {"arrive_wait_for",
       [](barrier_fixture& f, int side) {
         auto const t = f.arrive(side);
         if (f.b.wait_until(t, later())) {
           f.passed();
         }
       }},
      {"arrive_and_drop",
       [](barrier_fixture& f, int side) {
         f.payload[side].set(side + 1);
         f.b.arrive_and_drop();
       }},
      {"arrive_select",
       [](barrier_fixture& f, int side) {
         auto const t = f.arrive(side);
         if (spindle::select(spindle::on_phase_completed(f.b, t, [] {}),
                             spindle::on_deadline(later(), [] {})) == 0) {
           f.passed();
         }
       }},
  };
  return ops;
}

SPINDLE_OPERATION_MATRIX(BarrierPairs, barrier_fixture, barrier_ops(),
                         spindle_test::pair_schedules(300));

}  // namespace
