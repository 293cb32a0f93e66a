// The operation matrix of the synchronisation primitives: parker, mutex and wait list
// (detail/sync/), the fair semaphore under spindle::semaphore and spindle::mutex, and the
// executor's idle set (detail/executor/idle_set.hpp), every operation
// against every other and itself, under the model checker
// (tests/support/op_matrix.hpp). Each fixture is built so that both operations can finish on
// their own; a thread left asleep is a lost wake-up (a deadlock the checker reports), a plain
// write not published by the primitive's release/acquire pair is a data race, and finish()
// checks that every token or wake given was taken exactly once or is still there.
#include <spindle/detail/executor/idle_set.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/detail/sync/parker.hpp>
#include <spindle/detail/sync/wait_list.hpp>
#include <spindle/model/atomic.hpp>
#include <spindle/model/track_allocations.hpp>
#include <spindle/semaphore.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string_view>
#include <vector>

#include "support/op_matrix.hpp"

namespace model = spindle::model;
namespace detail = spindle::detail;
using spindle_test::operation;

namespace {

auto has(std::string_view a, std::string_view b, std::string_view name) -> bool {
  return a == name || b == name;
}

/// A deadline real time never reaches during a test: under the checker a timed wait times out
/// only when the scheduler chooses (virtual time), so the schedule alone decides.
auto later() -> detail::steady_time {
  return detail::steady_time::clock::now() + std::chrono::hours(1);
}

// ---------------------------------------------------------------------------------------------
// Parker: a binary token with one owner. park consumes the token (sleeping until it is
// there), park_for may also time out, unpark makes the token available. The payload written
// before an unpark must be visible to the park that consumes its token.

struct parker_fixture {
  detail::parker p;
  model::plain<int> payload[2];     // one per side, written before that side's unpark
  int unparker = 0;                 // the side of the unpark a park's token comes from
  detail::atomic<int> given{0};     // unparks run
  detail::atomic<int> consumed{0};  // parks that returned with a token

  parker_fixture(std::string_view a, std::string_view b) : unparker(a == "unpark" ? 0 : 1) {
    // A park with no unpark in the pair gets its token up front.
    if (!has(a, b, "unpark")) {
      p.unpark();
      given.store(1, std::memory_order_relaxed);
    }
  }

  static auto skip(std::string_view a, std::string_view b) -> char const* {
    bool const a_parks = a != "unpark";
    bool const b_parks = b != "unpark";
    return a_parks && b_parks ? "a parker has one owner: two threads may not park on it" : nullptr;
  }

  void finish() {
    // The token is binary: unparks beyond the first before a park are one token. Whatever
    // was not consumed is still there, so a non-blocking park_for takes it.
    int const left = p.park_for(std::chrono::nanoseconds(0)) ? 1 : 0;
    int const g = given.load(std::memory_order_relaxed);
    int const c = consumed.load(std::memory_order_relaxed);
    model::check(c + left >= 1 || g == 0, "a token was lost");
    model::check(c + left <= g, "a park returned without a token");
  }
};

auto parker_ops() -> std::vector<operation<parker_fixture>> const& {
  static std::vector<operation<parker_fixture>> const ops{
      // The owner sleeps until the token is there, then sees what the unparker wrote.
      {"park",
       [](parker_fixture& f, int) {
         f.p.park();
         f.consumed.fetch_add(1, std::memory_order_relaxed);
         static_cast<void>(f.payload[f.unparker].get());
       }},
      // The owner waits with a deadline; the checker may time it out at any point.
      {"park_for",
       [](parker_fixture& f, int) {
         if (f.p.park_until(later())) {
           f.consumed.fetch_add(1, std::memory_order_relaxed);
           static_cast<void>(f.payload[f.unparker].get());
         }
       }},
      // Any thread: publish a payload, then make the token available.
      {"unpark",
       [](parker_fixture& f, int side) {
         f.payload[side].set(side + 1);
         f.given.fetch_add(1, std::memory_order_relaxed);
         f.p.unpark();
       }},
  };
  return ops;
}

SPINDLE_OPERATION_MATRIX(ParkerPairs, parker_fixture, parker_ops(),
                         spindle_test::pair_schedules(400));

// ---------------------------------------------------------------------------------------------
// Mutex: lock/unlock, try_lock, and a holder that takes the lock twice in a row (the path on
// which a sleeper marked the lock contended must be woken). The critical sections write a
// plain counter: two threads inside at once is a data race, a lost wake-up a deadlock.

struct mutex_fixture {
  detail::mutex m;
  model::plain<int> inside;
  detail::atomic<int> entries{0};

  mutex_fixture(std::string_view, std::string_view) {}

  void critical() {
    inside.set(inside.get() + 1);
    entries.fetch_add(1, std::memory_order_relaxed);
  }

  void finish() {
    model::check(m.try_lock(), "the mutex is still held after both operations");
    model::check(inside.get() == entries.load(std::memory_order_relaxed),
                 "a critical section was lost");
    m.unlock();
  }
};

auto mutex_ops() -> std::vector<operation<mutex_fixture>> const& {
  static std::vector<operation<mutex_fixture>> const ops{
      {"lock",
       [](mutex_fixture& f, int) {
         f.m.lock();
         f.critical();
         f.m.unlock();
       }},
      {"try_lock",
       [](mutex_fixture& f, int) {
         if (f.m.try_lock()) {
           f.critical();
           f.m.unlock();
         }
       }},
      {"lock_twice",
       [](mutex_fixture& f, int) {
         for (int i = 0; i < 2; ++i) {
           f.m.lock();
           f.critical();
           f.m.unlock();
         }
       }},
  };
  return ops;
}

SPINDLE_OPERATION_MATRIX(MutexPairs, mutex_fixture, mutex_ops(), spindle_test::pair_schedules(400));

// ---------------------------------------------------------------------------------------------
// Wait list: the blocking protocol of wait_list.hpp on a toy structure (a count of tokens and
// a closed flag). wait takes a token or sees the close, registering and re-checking before it
// sleeps; wait_for may also time out; notify adds a token and wakes one waiter; close sets the
// flag and wakes every waiter. finish(): every token added was taken once or is still there,
// no waiter is left in the list, a wait that got nothing saw the close (or timed out).

struct wait_list_fixture {
  detail::wait_list list;
  detail::atomic<int> tokens{0};
  detail::atomic<bool> closed{false};
  int added = 0;                    // tokens added up front
  detail::atomic<int> notified{0};  // tokens added by notify
  detail::atomic<int> taken{0};

  wait_list_fixture(std::string_view a, std::string_view b) {
    // A pair with no notify and no close gets a token per waiting operation up front.
    if (!has(a, b, "notify") && !has(a, b, "close")) {
      added = (a.starts_with("wait") ? 1 : 0) + (b.starts_with("wait") ? 1 : 0);
      tokens.store(added, std::memory_order_relaxed);
    }
  }

  auto try_take() -> bool {
    // seq_cst: the structure's state change of wait_list.hpp's Dekker pair (B).
    int t = tokens.load(std::memory_order_seq_cst);
    while (t > 0) {
      if (tokens.compare_exchange_weak(t, t - 1, std::memory_order_seq_cst,
                                       std::memory_order_seq_cst)) {
        taken.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
    }
    return false;
  }

  auto ready() -> bool {
    // seq_cst: the re-check after registering (wait_list.hpp (A)).
    return tokens.load(std::memory_order_seq_cst) > 0 || closed.load(std::memory_order_seq_cst);
  }

  /// Returns whether a token was taken; false after close or the deadline.
  auto wait(std::optional<detail::steady_time> deadline) -> bool {
    for (;;) {
      if (try_take()) {
        return true;
      }
      if (closed.load(std::memory_order_seq_cst)) {
        return false;
      }
      detail::waiter self;
      detail::wait_entry entry(self);
      list.push(entry);
      if (ready() && self.try_select(detail::waiter::aborted)) {
        list.remove(entry);
        continue;
      }
      auto const how = self.wait(deadline);
      list.remove(entry);
      if (how == detail::waiter::aborted) {
        return try_take();  // the deadline: one last try
      }
    }
  }

  void finish() {
    model::check(list.is_empty(), "a waiter was left in the list");
    int const left = tokens.load(std::memory_order_relaxed);
    model::check(taken.load(std::memory_order_relaxed) + left ==
                     added + notified.load(std::memory_order_relaxed),
                 "a token was lost or taken twice");
  }
};

auto wait_list_ops() -> std::vector<operation<wait_list_fixture>> const& {
  static std::vector<operation<wait_list_fixture>> const ops{
      // Blocks until it takes a token or sees the close.
      {"wait",
       [](wait_list_fixture& f, int) {
         bool const got = f.wait(std::nullopt);
         model::check(got || f.closed.load(std::memory_order_relaxed),
                      "a wait returned with nothing before the close");
       }},
      // The same with a deadline the checker may let expire at any point.
      {"wait_for", [](wait_list_fixture& f, int) { static_cast<void>(f.wait(later())); }},
      // Adds a token, then wakes one waiter (the waker's half of the Dekker pair).
      {"notify",
       [](wait_list_fixture& f, int) {
         f.notified.fetch_add(1, std::memory_order_relaxed);
         // seq_cst: (B) in wait_list.hpp, before notify_one()'s load of is_empty.
         f.tokens.fetch_add(1, std::memory_order_seq_cst);
         f.list.notify_one();
       }},
      // Closes: every waiter wakes and sees it.
      {"close",
       [](wait_list_fixture& f, int) {
         f.closed.store(true, std::memory_order_seq_cst);
         f.list.close_all();
       }},
  };
  return ops;
}

SPINDLE_OPERATION_MATRIX(WaitListPairs, wait_list_fixture, wait_list_ops(),
                         spindle_test::pair_schedules(300));

// ---------------------------------------------------------------------------------------------
// Idle set: the executor's parking protocol on a toy queue (a count of items), two workers.
// notify publishes an item, runs the (N1) fence and wakes a sleeper if nobody searches;
// sleep registers (P1), re-checks the queue and parks unless it finds an item or the stop
// flag; search looks for an item as a searcher and, if it takes one and was the last
// searcher, wakes the next sleeper; wake_all sets the stop flag and wakes every sleeper
// (shutdown). Besides exactly-once over the items, the quiescence invariant of the idle set is
// checked: no item waits while a worker sleeps and nobody searches.

struct idle_fixture {
  detail::idle_set idle{2};
  detail::atomic<int> items{0};
  detail::atomic<bool> stop{false};
  int added = 0;
  detail::atomic<int> pushed{0};
  detail::atomic<int> taken{0};
  std::optional<model::quiescence_invariant> invariant;

  idle_fixture(std::string_view a, std::string_view b) {
    // A sleeper with nobody to wake it finds an item in its re-check instead (an idle worker
    // with no work sleeps until shutdown: that is not a lost wake-up).
    if (!has(a, b, "notify") && !has(a, b, "wake_all")) {
      // One per operation that may take one, so a searcher cannot leave a sleeper with none.
      added = (a != "wake_all" ? 1 : 0) + (b != "wake_all" ? 1 : 0);
      items.store(added, std::memory_order_relaxed);
    }
    invariant.emplace([this]() -> char const* {
      bool const idle_with_work = items.load() > 0 && idle.sleeping_count() > 0 &&
                                  idle.searching_count() == 0 && !stop.load();
      return idle_with_work ? "an item waits while a worker sleeps and nobody searches" : nullptr;
    });
  }

  auto try_take() -> bool {
    int n = items.load(std::memory_order_seq_cst);
    while (n > 0) {
      if (items.compare_exchange_weak(n, n - 1, std::memory_order_seq_cst)) {
        taken.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
    }
    return false;
  }

  /// A searcher that found an item ends its search; the last one wakes the next sleeper.
  void found_work() {
    if (idle.end_search() && idle.should_wake()) {
      idle.wake_one();
    }
  }

  void finish() {
    invariant.reset();
    model::check(idle.sleeping_count() == 0, "a worker is still counted asleep");
    model::check(idle.searching_count() == 0, "a worker is still counted searching");
    model::check(taken.load(std::memory_order_relaxed) + items.load(std::memory_order_relaxed) ==
                     added + pushed.load(std::memory_order_relaxed),
                 "an item was lost or taken twice");
  }
};

auto idle_ops() -> std::vector<operation<idle_fixture>> const& {
  static std::vector<operation<idle_fixture>> const ops{
      // A notifier: (N1) publish, fence, wake a sleeper if nobody searches.
      {"notify",
       [](idle_fixture& f, int) {
         f.pushed.fetch_add(1, std::memory_order_relaxed);
         f.items.fetch_add(1, std::memory_order_seq_cst);
         detail::fence_seq_cst();
         if (f.idle.should_wake()) {
           f.idle.wake_one();
         }
       }},
      // Worker `side` goes idle: (P1) register, fence, re-check, park; once woken (as a
      // searcher) or having seen an item, it searches and takes one if there is one.
      {"sleep",
       [](idle_fixture& f, int side) {
         auto const me = static_cast<std::size_t>(side);
         f.idle.prepare_park(me, false);
         detail::fence_seq_cst();
         bool searching = false;
         if (f.items.load(std::memory_order_seq_cst) > 0 || f.stop.load()) {
           searching = f.idle.cancel_park(me);
         } else {
           f.idle.park(me);
           searching = f.idle.cancel_park(me);
         }
         if (!searching) {
           searching = f.idle.force_begin_search();
         }
         if (f.try_take()) {
           f.found_work();
         } else {
           static_cast<void>(f.idle.end_search());
         }
       }},
      // Worker `side`, awake, searches once: takes an item if there is one.
      {"search",
       [](idle_fixture& f, int) {
         if (!f.idle.try_begin_search()) {
           return;
         }
         if (f.try_take()) {
           f.found_work();
         } else {
           static_cast<void>(f.idle.end_search());
         }
       }},
      // Shutdown: every sleeper wakes and sees the stop flag.
      {"wake_all",
       [](idle_fixture& f, int) {
         f.stop.store(true);
         f.idle.wake_all();
       }},
  };
  return ops;
}

SPINDLE_OPERATION_MATRIX(IdleSetPairs, idle_fixture, idle_ops(), spindle_test::pair_schedules(300));

// ---------------------------------------------------------------------------------------------
// Fair semaphore (detail/sync/fair_semaphore.hpp, under spindle::semaphore and spindle::mutex):
// a semaphore of 2 permits. acquire and try_acquire take one permit and read a plain word;
// acquire_two takes both (a waiter that collects permits one at a time while queued) and writes
// the word; acquire_for takes both with a deadline the checker may let pass at any point,
// giving back what it collected. A writer holding both permits and a reader holding one at once
// is a data race the detector reports; a permit not handed on is a deadlock; finish() finds
// both permits back.

struct semaphore_fixture {
  spindle::semaphore sem{2};
  model::plain<int> word;
  detail::atomic<int> held{0};

  semaphore_fixture(std::string_view, std::string_view) {}

  void enter(int n) {
    model::check(held.fetch_add(n, std::memory_order_relaxed) + n <= 2,
                 "more permits held than the semaphore has");
  }
  void leave(int n) { held.fetch_sub(n, std::memory_order_relaxed); }
  void read() { static_cast<void>(word.get()); }
  void write() { word.set(word.get() + 1); }

  void finish() {
    model::check(sem.available() == 2, "a permit was lost or counted twice");
    model::check(sem.try_acquire(2).has_value(), "both permits are free at the end");
  }
};

auto semaphore_ops() -> std::vector<operation<semaphore_fixture>> const& {
  static std::vector<operation<semaphore_fixture>> const ops{
      {"acquire",
       [](semaphore_fixture& f, int) {
         auto p = f.sem.acquire();
         f.enter(1);
         f.read();
         f.leave(1);
       }},
      {"try_acquire",
       [](semaphore_fixture& f, int) {
         if (auto p = f.sem.try_acquire()) {
           f.enter(1);
           f.read();
           f.leave(1);
         }
       }},
      {"acquire_two",
       [](semaphore_fixture& f, int) {
         auto p = f.sem.acquire(2);
         f.enter(2);
         f.write();
         f.leave(2);
       }},
      {"acquire_for",
       [](semaphore_fixture& f, int) {
         if (auto p = f.sem.acquire_until(later(), 2)) {
           f.enter(2);
           f.write();
           f.leave(2);
         }
       }},
  };
  return ops;
}

SPINDLE_OPERATION_MATRIX(SemaphorePairs, semaphore_fixture, semaphore_ops(),
                         spindle_test::pair_schedules(300));

}  // namespace
