// spindle::semaphore and spindle::mutex (the fair semaphore of detail/sync/fair_semaphore.hpp)
// under the model checker, on the real code. What each execution checks:
//   - exclusion: a mutex's critical sections write a plain counter the race detector sees, so a
//     hand-off that does not publish the previous holder's writes is reported;
//   - no permit lost or counted twice: after every schedule the semaphore holds exactly the
//     permits it started with (plus those released into it), and no more parties held permits
//     at once than there were;
//   - no lost wake-up: a waiter left asleep while the permits it needs are free is a deadlock the
//     checker reports;
//   - the partial grant: a waiter for several permits that collected some and then gave up (its
//     deadline, another case of its select) gives them back to the next waiter.
// Timed waits use a deadline real time never reaches: under the checker a timeout happens only
// when the scheduler chooses it, anywhere in the wait. The seeded bugs of this protocol are
// mutants of the real code (tools/mutate/mutants.txt, `semaphore-*`) that these tests kill.
#include <spindle/channel.hpp>
#include <spindle/mutex.hpp>
#include <spindle/notify.hpp>
#include <spindle/select.hpp>
#include <spindle/semaphore.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <optional>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle_test::budget;
using spindle_test::explore_and_report;
using spindle_test::explore_three;

namespace {

constexpr auto long_wait = std::chrono::hours(1);

/// Counts the permits held at once and checks the bound.
struct holders {
  explicit holders(std::size_t bound) : limit(bound) {}
  void enter(std::size_t n) {
    std::size_t const now = held.fetch_add(n, std::memory_order_relaxed) + n;
    model::check(now <= limit, "more permits held at once than the semaphore has");
  }
  void leave(std::size_t n) { held.fetch_sub(n, std::memory_order_relaxed); }
  std::size_t limit;
  spindle::detail::atomic<std::size_t> held{0};
};

/// Two threads and the body lock a mutex, one of them with a deadline the checker may let
/// pass, and one round with try_lock: every critical section that ran is counted once.
void mutex_body() {
  spindle::mutex m;
  model::plain<int> counter;
  spindle::detail::atomic<int> entered{0};
  auto critical = [&] {
    counter.set(counter.get() + 1);
    entered.fetch_add(1, std::memory_order_relaxed);
  };
  model::thread a([&] {
    for (int i = 0; i < 2; ++i) {
      auto g = m.lock();
      critical();
    }
  });
  model::thread b([&] {
    if (auto g = m.lock_for(long_wait)) {
      critical();
    }
  });
  if (auto g = m.try_lock()) {
    critical();
  }
  {
    auto g = m.lock();
    critical();
  }
  a.join();
  b.join();
  auto g = m.try_lock();
  model::check(g.has_value(), "the mutex is held after every guard was destroyed");
  model::check(counter.get() == entered.load(std::memory_order_relaxed),
               "a critical section was lost");
}

/// A semaphore of 2: a waiter for both permits (it collects one at a time while the others
/// hold them), a thread taking one permit twice, and the body taking one with a deadline.
void batch_body() {
  spindle::semaphore s(2);
  holders h(2);
  model::thread big([&] {
    auto p = s.acquire(2);
    h.enter(2);
    h.leave(2);
  });
  model::thread small([&] {
    for (int i = 0; i < 2; ++i) {
      auto p = s.acquire();
      h.enter(1);
      h.leave(1);
    }
  });
  if (auto p = s.acquire_for(long_wait)) {
    h.enter(1);
    h.leave(1);
  }
  big.join();
  small.join();
  model::check(s.available() == 2, "a permit was lost or counted twice");
}

/// A waiter for 2 permits collects the first release, then its deadline may pass (the checker
/// decides) before the second; either way both permits end up in the semaphore or with the
/// waiter, and a second waiter behind it is served.
void partial_grant_body() {
  spindle::semaphore s(0);
  spindle::detail::atomic<std::size_t> kept{0};
  model::thread first([&] {
    if (auto p = s.acquire_for(long_wait, 2)) {
      kept.fetch_add(p->forget(), std::memory_order_relaxed);
    }
  });
  model::thread second([&] {
    auto p = s.acquire(1);
    kept.fetch_add(p.forget(), std::memory_order_relaxed);
  });
  s.release();
  s.release();
  s.release();
  first.join();
  second.join();
  model::check(s.available() + kept.load(std::memory_order_relaxed) == 3,
               "a permit was lost or counted twice");
}

/// A select over two semaphores and a timeout: each semaphore gets one permit from another
/// thread, and the checker may let the deadline pass at any point. The select completes exactly
/// one case; the permits it did not take stay in their semaphores. (A stop request from another
/// model thread cannot be explored: std::stop_callback's destructor waits for a running
/// callback outside the checker's sight. The stop case's abort is the timeout's: one CAS on the
/// waiter, then its wake.)
void select_body() {
  spindle::semaphore a(0);
  spindle::semaphore b(0);
  model::thread ra([&] { a.release(); });
  model::thread rb([&] { b.release(); });
  std::size_t taken = 0;
  int completed = 0;
  auto const i = spindle::select(spindle::on_acquire(a,
                                                     [&](spindle::semaphore_permit p) {
                                                       taken += p.forget();
                                                       ++completed;
                                                     }),
                                 spindle::on_acquire(b,
                                                     [&](spindle::semaphore_permit p) {
                                                       taken += p.forget();
                                                       ++completed;
                                                     }),
                                 spindle::on_timeout(long_wait, [&] { ++completed; }));
  ra.join();
  rb.join();
  model::check(completed == 1, "a select must complete exactly one case");
  model::check(a.available() + b.available() + taken == 2, "a permit was lost or counted twice");
  model::check(i != 2 || taken == 0, "the timeout case took a permit");
}

/// A shared mutex: a writer and two readers, one reader with a deadline the checker may let
/// pass. A writer never overlaps a reader.
void shared_body() {
  spindle::shared_mutex rw;
  model::plain<int> value;
  spindle::detail::atomic<int> readers{0};
  model::thread writer([&] {
    auto g = rw.lock();
    model::check(readers.load(std::memory_order_relaxed) == 0, "a writer overlapped a reader");
    value.set(value.get() + 1);
  });
  model::thread reader([&] {
    auto g = rw.lock_shared();
    readers.fetch_add(1, std::memory_order_relaxed);
    static_cast<void>(value.get());
    readers.fetch_sub(1, std::memory_order_relaxed);
  });
  if (auto g = rw.lock_shared_for(long_wait)) {
    readers.fetch_add(1, std::memory_order_relaxed);
    static_cast<void>(value.get());
    readers.fetch_sub(1, std::memory_order_relaxed);
  }
  writer.join();
  reader.join();
  model::check(rw.try_lock().has_value(), "the shared mutex is held after every guard went");
}

/// spindle::notify: two timed waiters against two notify_one calls from another thread (with
/// nobody waiting, the two store one permit: they do not add up). Every notification ends a
/// wait or is still stored: at least one of the two is used or kept, never more than two.
void notify_body() {
  spindle::notify n;
  spindle::detail::atomic<int> woke{0};
  model::thread one([&] {
    n.notify_one();
    n.notify_one();
  });
  model::thread timed([&] {
    if (n.wait_for(long_wait)) {
      woke.fetch_add(1, std::memory_order_relaxed);
    }
  });
  if (n.wait_for(long_wait)) {
    woke.fetch_add(1, std::memory_order_relaxed);
  }
  one.join();
  timed.join();
  int const total = woke.load(std::memory_order_relaxed) + (n.wait_for(long_wait) ? 1 : 0);
  model::check(total >= 1 && total <= 2, "a notification was lost or consumed twice");
}

/// notify_all then notify_one against a waiter: queued before notify_all, it is woken by it and
/// notify_one stores a permit; otherwise notify_one wakes it or stores the permit it takes.
void notify_all_body() {
  spindle::notify n;
  spindle::detail::atomic<int> woke{0};
  model::thread a([&] {
    n.wait();
    woke.fetch_add(1, std::memory_order_relaxed);
  });
  n.notify_all();
  n.notify_one();
  a.join();
  int const total = woke.load(std::memory_order_relaxed) + (n.wait_for(long_wait) ? 1 : 0);
  model::check(total >= 1 && total <= 2, "a notification was lost or consumed twice");
}

}  // namespace

TEST(ModelSemaphore, NotifyOneAndTimedWaits) {
  explore_three("notify: wait, wait_for, notify_one", 61, 2000, notify_body);
}

TEST(ModelSemaphore, NotifyAll) {
  explore_three("notify: notify_all, notify_one", 71, 2000, notify_all_body);
}

TEST(ModelSemaphore, MutexExcludesAndWakes) {
  explore_three("mutex: lock, lock_for, try_lock", 11, 2000, mutex_body);
}

TEST(ModelSemaphore, BatchWaiterCollectsPermits) {
  explore_three("semaphore(2): acquire(2) against acquire(1)", 21, 2000, batch_body);
}

TEST(ModelSemaphore, PartialGrantGivenBackOnTimeout) {
  explore_three("semaphore: acquire_for(2) times out holding one", 31, 2000, partial_grant_body);
  explore_and_report("semaphore: partial grant, dfs bound 2", model::exhaustive(2, budget(20000)),
                     partial_grant_body);
}

TEST(ModelSemaphore, SelectOverTwoSemaphoresAndATimeout) {
  explore_three("select: two acquires and a timeout", 41, 2000, select_body);
}

TEST(ModelSemaphore, SharedMutexWriterAndReaders) {
  explore_three("shared_mutex: writer, reader, timed reader", 51, 2000, shared_body);
}
