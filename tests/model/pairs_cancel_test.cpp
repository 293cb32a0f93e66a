// The operation matrix of the cancellation slot (detail/coro/cancel.hpp): request, a wait that
// arms a hook and disarms it (the protocol every spindle awaitable follows around a
// suspension), close (the coroutine ended) and a plain check, every operation against every
// other and itself, under the model checker (tests/support/op_matrix.hpp).
//
// The wait stands in for an awaitable: its hook unparks the waiting thread, as a real hook
// aborts the awaitable's waiter; it sleeps with a deadline real time never reaches, which the
// checker may let pass (the wait ended for another reason: a value, a timeout). A hook that
// never runs for an armed wait after an accepted request is a lost cancellation (the waiter
// sleeps until the checker's deadline, and finish() sees the request without the hook); a hook
// that runs twice, or after disarm returned, breaks the counts finish() checks.
#include <spindle/detail/coro/cancel.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/parker.hpp>
#include <spindle/model/atomic.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <string_view>
#include <vector>

#include "support/op_matrix.hpp"

namespace model = spindle::model;
namespace detail = spindle::detail;
using spindle_test::operation;

namespace {

auto later() -> detail::steady_time {
  return detail::steady_time::clock::now() + std::chrono::hours(1);
}

struct cancel_fixture;

/// The hook of the fixture's wait, as an awaitable derives from cancel_hook.
struct fixture_hook : detail::cancel_hook {
  cancel_fixture* f = nullptr;
};

struct cancel_fixture {
  detail::cancel_slot slot;
  detail::parker waiter;
  fixture_hook hook;
  detail::atomic<int> accepted{0};      // requests that returned true
  detail::atomic<int> fired{0};         // runs of the hook
  detail::atomic<int> armed{0};         // waits that armed the hook
  detail::atomic<int> refused{0};       // waits whose arm found the request
  detail::atomic<int> taken{0};         // disarms that found the hook taken by a request
  detail::atomic<int> after_disarm{0};  // hook runs that came after their wait's disarm
  detail::atomic<int> disarmed{0};
  detail::atomic<int> closed{0};

  cancel_fixture(std::string_view, std::string_view) {
    hook.f = this;
    hook.fire = [](detail::cancel_hook* h) noexcept {
      cancel_fixture* f = static_cast<fixture_hook*>(h)->f;
      if (f->disarmed.load(std::memory_order_relaxed) != 0) {
        f->after_disarm.fetch_add(1, std::memory_order_relaxed);
      }
      f->fired.fetch_add(1, std::memory_order_relaxed);
      f->waiter.unpark();
    };
  }

  static auto skip(std::string_view a, std::string_view b) -> char const* {
    if (a == "wait" && b == "wait") {
      return "a slot holds the hook of one suspended awaitable";
    }
    return nullptr;
  }

  void finish() {
    int const acc = accepted.load(std::memory_order_relaxed);
    int const fire = fired.load(std::memory_order_relaxed);
    model::check(acc <= 1, "two requests were both accepted");
    model::check(fire <= 1, "the hook ran twice");
    model::check(fire == taken.load(std::memory_order_relaxed),
                 "disarm reports the hook taken exactly when it ran");
    model::check(after_disarm.load(std::memory_order_relaxed) == 0,
                 "the hook ran after its wait's disarm returned");
    if (acc == 1) {
      model::check(slot.requested(), "an accepted request is not visible");
    }
    if (fire == 1) {
      model::check(acc == 1, "the hook ran without an accepted request");
    }
    if (acc == 1 && armed.load(std::memory_order_relaxed) == 1 &&
        closed.load(std::memory_order_relaxed) == 0) {
      // The wait armed; the request, accepted, either took the hook or came after disarm.
      model::check(fire == 1 || disarmed.load(std::memory_order_relaxed) == 1,
                   "an accepted request missed an armed hook");
    }
  }
};

auto cancel_ops() -> std::vector<operation<cancel_fixture>> const& {
  static std::vector<operation<cancel_fixture>> const ops{
      {"request",
       [](cancel_fixture& f, int) {
         if (f.slot.request()) {
           f.accepted.fetch_add(1, std::memory_order_relaxed);
         }
       }},
      // An awaitable's suspension: arm, sleep until the hook or the (virtual) deadline, disarm.
      {"wait",
       [](cancel_fixture& f, int) {
         auto const armed = f.slot.arm(&f.hook);
         if (armed == detail::cancel_slot::arm_result::cancelled) {
           f.refused.fetch_add(1, std::memory_order_relaxed);
           model::check(f.slot.requested(), "arm refused without a request");
           return;
         }
         if (armed == detail::cancel_slot::arm_result::unneeded) {
           model::check(f.closed.load(std::memory_order_relaxed) == 1,
                        "arm found the slot closed before close() ran");
           return;
         }
         f.armed.fetch_add(1, std::memory_order_relaxed);
         static_cast<void>(f.waiter.park_until(later()));
         if (f.slot.disarm(&f.hook)) {
           f.taken.fetch_add(1, std::memory_order_relaxed);
         }
         f.disarmed.fetch_add(1, std::memory_order_relaxed);
       }},
      {"close",
       [](cancel_fixture& f, int) {
         // Counted first: a wait that finds the slot closed (acquire) sees the count.
         f.closed.fetch_add(1, std::memory_order_relaxed);
         f.slot.close();
       }},
      {"check", [](cancel_fixture& f, int) { static_cast<void>(f.slot.requested()); }},
  };
  return ops;
}

}  // namespace

SPINDLE_OPERATION_MATRIX(CancelPairs, cancel_fixture, cancel_ops(),
                         spindle_test::pair_schedules(400));
