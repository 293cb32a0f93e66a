// The operation matrix of the executor's floor (its table is in tests/model/README.md): every
// unordered pair of public operations of the work-stealing deque, the injector, a worker's next
// slot and its watch, the executor, task_group and the parallel loops runs as a small model
// test, one operation on each of two threads, on a fixture built for that pair
// (tests/support/op_matrix.hpp).
//
// What each pair proves, in every schedule the checker tries:
// - exactly-once: every item pushed into a deque or the injector is taken exactly once, and
//   every task the executor accepted runs exactly once (a refused one never runs); every
//   join returns its task's value once, and every result is destroyed exactly once
//   (tracked instance counts), joined or detached;
// - publication: whatever a producer wrote before handing an item or a task over is visible
//   to the taker, and a task's writes to whoever joins or waits for it (the race detector
//   checks model::plain payloads);
// - progress: no thread is left asleep (a lost wake-up is a deadlock), a task waiting for
//   another task helps instead of blocking its worker, and shutdown returns after finishing
//   all accepted work;
// - the structure's own contract: a push after close is refused, wait() rethrows a task's
//   exception exactly once, a parallel loop racing shutdown runs all of its indices or none.
//
// Pairs of two owner-only deque operations and two concurrent task_group waits are misuse and
// are reported as skipped with the reason; so are the loop suite's pairs without a loop,
// which the executor suite already runs.
#include <spindle/deque.hpp>
#include <spindle/detail/executor/injector.hpp>
#include <spindle/detail/executor/next_slot.hpp>
#include <spindle/detail/executor/task.hpp>
#include <spindle/executor.hpp>
#include <spindle/join_handle.hpp>
#include <spindle/model/atomic.hpp>
#include <spindle/model/scheduler.hpp>
#include <spindle/model/track_allocations.hpp>
#include <spindle/parallel.hpp>
#include <spindle/task_group.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "model/support.hpp"
#include "support/model_cases.hpp"
#include "support/op_matrix.hpp"
#include "support/tracked.hpp"

namespace model = spindle::model;
using spindle_test::budget;
using spindle_test::operation;
using spindle_test::tracked;

namespace {

void bump(model::plain<int>& counter) {
  counter.set(counter.get() + 1);
}

/// Schedules for the pairs of the deque and the injector: a few dozen scheduling points per
/// execution, so a bounded exhaustive search completes; PCT, TSO and the weak memory mode as
/// in pair_schedules().
auto queue_schedules() -> std::vector<model::options> {
  auto dfs = model::exhaustive(2, budget(20000));
  auto pct = model::pct_schedules(1, budget(500), 3);
  auto tso = model::random_schedules(2, budget(500));
  tso.store_buffering = true;
  auto weak = model::random_schedules(4, budget(500));
  weak.weak_memory = true;
  return {dfs, pct, tso, weak};
}

/// Schedules for the pairs that run an executor: its workers spin and search, which makes the
/// schedule tree far too wide for a bounded exhaustive search to reach past the first steps
/// (tests/model/executor_test.cpp, BatchInTransitIsAnnounced), so PCT of depth 3, uniform
/// random, PCT on x86-TSO store buffers and PCT in the weak memory mode. Fewer under
/// sanitizers (budget()).
auto executor_schedules(std::uint64_t executions) -> std::vector<model::options> {
  auto pct = model::pct_schedules(1, budget(executions), 3);
  auto rnd = model::random_schedules(2, budget(executions / 2));
  auto tso = model::pct_schedules(3, budget(executions / 2), 3);
  tso.store_buffering = true;
  auto weak = model::pct_schedules(5, budget(executions / 2), 3);
  weak.weak_memory = true;
  return {pct, rnd, tso, weak};
}

// ---- the work-stealing deque -----------------------------------------------------------------

auto deque_owner_op(std::string_view op) -> bool {
  return op == "push" || op == "push_grow" || op == "pop" || op == "pop_fifo";
}

auto deque_taking_op(std::string_view op) -> bool {
  return op == "pop" || op == "pop_fifo" || op == "steal" || op == "steal_batch" ||
         op == "steal_batch_span";
}

/// A Chase-Lev deque (deque_owner + stealers) with one item prefilled per taking operation,
/// so that the takers race for the last items. `push_grow` starts from capacity 1, so that it
/// grows the buffer while a thief reads it; `pop_fifo` makes the owner pop oldest first.
class deque_fixture {
 public:
  static auto skip(std::string_view a, std::string_view b) -> char const* {
    if (deque_owner_op(a) && deque_owner_op(b)) {
      return "both are owner operations: a deque_owner is used by one thread at a time "
             "(deque.hpp), so running them on two threads is misuse";
    }
    return nullptr;
  }

  deque_fixture(std::string_view a, std::string_view b)
      : grow_(a == "push_grow" || b == "push_grow"),
        owner_(a == "pop_fifo" || b == "pop_fifo" ? spindle::deque_order::fifo
                                                  : spindle::deque_order::lifo,
               grow_ ? 1 : 4),
        thieves_{owner_.stealer(), owner_.stealer()} {
    int const prefill = static_cast<int>(deque_taking_op(a)) + static_cast<int>(deque_taking_op(b));
    for (int i = 0; i < prefill; ++i) {
      owner_.push(ledger_.make(i));
      pushed_.push_back(i);
    }
  }

  /// Owner: pushes `n` items with indices of this side.
  void push(int side, int n) {
    for (int k = 0; k < n; ++k) {
      int const index = 10 * (side + 1) + k;
      owner_.push(ledger_.make(index));
      own_pushes_[static_cast<std::size_t>(side)].push_back(index);
    }
  }

  /// Owner: two pops (LIFO or FIFO, as the deque was made).
  void pop(int side) {
    for (int k = 0; k < 2; ++k) {
      if (auto v = owner_.pop()) {
        ledger_.take(taken(side), *v);
      }
    }
  }

  /// Thief: two steals through this side's own stealer.
  void steal(int side) {
    for (int k = 0; k < 2; ++k) {
      auto r = thieves_[static_cast<std::size_t>(side)].steal();
      if (r.is_stolen()) {
        ledger_.take(taken(side), *r.value);
      }
    }
  }

  /// Thief: two batch steals into a deque of its own (capacity 1, so the batch may grow it),
  /// each drained at once by its owner, this thread.
  void steal_batch(int side) {
    spindle::deque_owner<int> mine(spindle::deque_order::lifo, 1);
    for (int k = 0; k < 2; ++k) {
      auto r = thieves_[static_cast<std::size_t>(side)].steal_batch_and_pop(mine);
      if (r.is_stolen()) {
        ledger_.take(taken(side), *r.value);
      }
      while (auto v = mine.pop()) {
        ledger_.take(taken(side), *v);
      }
    }
  }

  /// Thief: two batch steals into a span of two, which the thread takes itself.
  void steal_batch_span(int side) {
    for (int k = 0; k < 2; ++k) {
      std::array<int, 2> out{};
      auto const r = thieves_[static_cast<std::size_t>(side)].steal_batch(out);
      for (std::size_t i = 0; i < r.count; ++i) {
        ledger_.take(taken(side), out[i]);
      }
    }
  }

  void finish() {
    // The body's thread owns the deque again (the other thread was joined).
    while (auto v = owner_.pop()) {
      ledger_.take(rest_, *v);
    }
    model::check(owner_.empty(), "the drained deque is not empty");
    if (grow_) {
      // Before the buffer grows each steal takes at most one item (a batch takes half of at
      // most one), so three pushes onto one prefilled item always grow a buffer of one slot.
      model::check(owner_.capacity() > 1, "push_grow did not grow the buffer");
    }
    std::vector<int> all = pushed_;
    for (auto const& mine : own_pushes_) {
      all.insert(all.end(), mine.begin(), mine.end());
    }
    spindle_test::expect_each_of_once({taken_[0], taken_[1], rest_}, all);
  }

 private:
  auto taken(int side) -> std::vector<int>& { return taken_[static_cast<std::size_t>(side)]; }

  bool grow_;
  spindle_test::payload_ledger ledger_;
  spindle::deque_owner<int> owner_;
  std::array<spindle::stealer<int>, 2> thieves_;
  std::vector<int> pushed_;
  std::array<std::vector<int>, 2> own_pushes_;
  std::array<std::vector<int>, 2> taken_;
  std::vector<int> rest_;
};

auto deque_ops() -> std::vector<operation<deque_fixture>> const& {
  static std::vector<operation<deque_fixture>> const ops{
      // One push by the owner: the thief sees the item only once it is published.
      {"push", [](deque_fixture& f, int side) { f.push(side, 1); }},
      // Three pushes from capacity 1: growth copies the buffer while a thief reads the old one.
      {"push_grow", [](deque_fixture& f, int side) { f.push(side, 3); }},
      // Two LIFO pops: the last item goes to exactly one of the owner and a thief.
      {"pop", [](deque_fixture& f, int side) { f.pop(side); }},
      // Two FIFO pops (a deque made with deque_order::fifo): the owner takes from the top too.
      {"pop_fifo", [](deque_fixture& f, int side) { f.pop(side); }},
      // Two steals: an item is taken once; a lost race returns retry, never a duplicate.
      {"steal", [](deque_fixture& f, int side) { f.steal(side); }},
      // Two batch steals: one CAS claims a batch, moved into the thief's own deque.
      {"steal_batch", [](deque_fixture& f, int side) { f.steal_batch(side); }},
      // Two batch steals into a span: the batch goes to the thief, not into a deque.
      {"steal_batch_span", [](deque_fixture& f, int side) { f.steal_batch_span(side); }},
  };
  return ops;
}

// ---- the injector --------------------------------------------------------------------------

using small_injector = spindle::detail::basic_injector<2>;

void no_op(spindle::detail::task* /*unused*/) noexcept {}

/// A task the injector carries, with a payload its pusher writes before the push.
struct injected {
  spindle::detail::task t{&no_op};
  model::plain<int> payload;
};

auto injector_popping_op(std::string_view op) -> bool {
  return op == "pop" || op == "pop_batch";
}

/// The executor's global queue with blocks of two task pointers (so that a handful of tasks
/// crosses blocks and recycles the spare), prefilled with one task per popping operation and
/// one more. Task indices: 0-2 prefill, 3-6 the pushes of the two sides, 7-8 the pushes each
/// closer tries after its close, 9 the push finish() tries.
class injector_fixture {
 public:
  injector_fixture(std::string_view a, std::string_view b)
      : closing_(a == "close" || b == "close") {
    int const prefill =
        1 + static_cast<int>(injector_popping_op(a)) + static_cast<int>(injector_popping_op(b));
    for (int i = 0; i < prefill; ++i) {
      model::check(push(i), "push refused before close");
    }
  }

  /// Writes the payload of task `i`, pushes it and records whether it was accepted.
  auto push(int i) -> bool {
    auto& it = items_[static_cast<std::size_t>(i)];
    it.payload.set(i + 1);
    bool const ok = q_.push(&it.t);
    accepted_[static_cast<std::size_t>(i)].set(ok ? 1 : 0);
    return ok;
  }

  /// Reads the payload of a popped task (a race unless the push published it) and records it.
  void take(std::vector<int>& into, spindle::detail::task* t) {
    for (std::size_t i = 0; i < items_.size(); ++i) {
      if (&items_[i].t == t) {
        model::check(items_[i].payload.get() == static_cast<int>(i) + 1,
                     "the popper does not see the pusher's payload");
        into.push_back(static_cast<int>(i));
        return;
      }
    }
    model::check(false, "popped a task that was never pushed");
  }

  auto taken(int side) -> std::vector<int>& { return taken_[static_cast<std::size_t>(side)]; }
  auto queue() -> small_injector& { return q_; }
  /// The `max` of pop_batch: a member, not a constant, because g++ 12 at -O2 reports
  /// -Wmaybe-uninitialized on pop_batch's local batch array when `max` is a constant >= 2.
  [[nodiscard]] auto batch_max() const -> std::size_t { return batch_max_; }

  void finish() {
    // A push now is refused exactly when a close ran.
    model::check(push(9) != closing_, "a push after close was accepted, or one before refused");
    while (spindle::detail::task* t = q_.pop()) {
      take(rest_, t);
    }
    model::check(q_.looks_empty(), "the drained queue does not look empty");
    std::array<int, items> seen{};
    for (auto const* list : {&taken_[0], &taken_[1], &rest_}) {
      for (int i : *list) {
        ++seen[static_cast<std::size_t>(i)];
      }
      // FIFO per pusher: the prefill (pushed first), then each side's own pushes in order.
      for (int side = 0; side < 2; ++side) {
        int last = -1;
        for (int i : *list) {
          if (i <= 2 || i == 3 + 2 * side || i == 4 + 2 * side) {
            model::check(i > last, "tasks of one pusher were popped out of order");
            last = i;
          }
        }
      }
    }
    for (std::size_t i = 0; i < items; ++i) {
      model::check(seen[i] == accepted_[i].get(),
                   "an accepted task was lost or popped twice, or a refused one was queued");
    }
  }

 private:
  static constexpr std::size_t items = 10;

  bool closing_;
  std::size_t batch_max_ = 2;
  small_injector q_;
  std::array<injected, items> items_{};
  std::array<model::plain<int>, items> accepted_{};
  std::array<std::vector<int>, 2> taken_;
  std::vector<int> rest_;
};

/// Two pop_batch calls (share 1, at most two tasks each): the first task is returned,
/// the second handed to the sink before pop_batch returns.
void pop_batches(injector_fixture& f, int side) {
  for (int k = 0; k < 2; ++k) {
    std::array<spindle::detail::task*, 2> later{};
    std::size_t n_later = 0;
    spindle::detail::task* const first = f.queue().pop_batch(
        1, f.batch_max(), [&later, &n_later](spindle::detail::task* more) noexcept {
          later[n_later++ % later.size()] = more;
        });
    if (first != nullptr) {
      f.take(f.taken(side), first);
    }
    model::check(n_later <= 1, "pop_batch took more than it was allowed");
    for (std::size_t i = 0; i < n_later; ++i) {
      f.take(f.taken(side), later[i]);
    }
  }
}

auto injector_ops() -> std::vector<operation<injector_fixture>> const& {
  static std::vector<operation<injector_fixture>> const ops{
      // Two pushes (across a block boundary): each is accepted (and popped once) or refused.
      {"push",
       [](injector_fixture& f, int side) {
         f.push(3 + 2 * side);
         f.push(4 + 2 * side);
       }},
      // Two single pops: a popped task carries its pusher's payload.
      {"pop",
       [](injector_fixture& f, int side) {
         for (int k = 0; k < 2; ++k) {
           if (spindle::detail::task* t = f.queue().pop()) {
             f.take(f.taken(side), t);
           }
         }
       }},
      // Two batch pops of up to two tasks: a batch never splits or duplicates a task.
      {"pop_batch", [](injector_fixture& f, int side) { pop_batches(f, side); }},
      // close(), then a push by the same thread, which must be refused.
      {"close",
       [](injector_fixture& f, int side) {
         f.queue().close();
         model::check(!f.push(7 + side), "a push after close() was accepted");
       }},
  };
  return ops;
}

// ---- the executor --------------------------------------------------------------------------

/// An executor with two workers. Tasks are numbered per side (side * 4 + slot): slot 0 the
/// task spawned by the constructor for an operation that joins or drops a handle, slot 1 the
/// task the operation submits, slot 2 the task that one spawns from inside. Every task counts
/// its runs in `runs_` and returns a tracked value, so that finish() sees each result
/// destroyed exactly once.
class executor_fixture {
 public:
  static constexpr int pre_slot = 0;
  static constexpr int own_slot = 1;
  static constexpr int child_slot = 2;

  executor_fixture(std::string_view a, std::string_view b) : live_before_(tracked::live()) {
    ex_.emplace(std::size_t{2});
    std::array<std::string_view, 2> const names{a, b};
    for (int side = 0; side < 2; ++side) {
      auto const name = names[static_cast<std::size_t>(side)];
      if (name == "join_outside" || name == "join_inside" || name == "detach") {
        pre_[static_cast<std::size_t>(side)] = ex_->spawn(counted(id(side, pre_slot)));
        accepted_[static_cast<std::size_t>(id(side, pre_slot))].set(1);
      }
      join_inside_[static_cast<std::size_t>(side)] = name == "join_inside";
    }
  }

  static auto id(int side, int slot) -> int { return side * 4 + slot; }

  /// A task that counts its run and returns tracked(id).
  struct counted_task {
    executor_fixture* f;
    int task_id;
    auto operator()() const -> tracked {
      bump(f->runs_[static_cast<std::size_t>(task_id)]);
      return tracked(static_cast<std::uint64_t>(task_id));
    }
  };
  auto counted(int task_id) -> counted_task { return counted_task{this, task_id}; }

  /// post() from outside: accepted (and run once) unless shutdown began first.
  void post(int side) {
    int const own = id(side, own_slot);
    try {
      ex_->post(counted(own));
      accepted_[static_cast<std::size_t>(own)].set(1);
    } catch (std::logic_error const&) {
      // Refused: shutdown began; finish() checks that it never ran.
    }
  }

  /// spawn() from outside; finish() joins the handle.
  void spawn(int side) {
    int const own = id(side, own_slot);
    try {
      handles_[static_cast<std::size_t>(side)] = ex_->spawn(counted(own));
      accepted_[static_cast<std::size_t>(own)].set(1);
    } catch (std::logic_error const&) {
      // Refused, as for post.
    }
  }

  /// A task posted from outside spawns a child from its worker (accepted even during
  /// shutdown) and keeps the child's handle for finish().
  void spawn_inside(int side) {
    int const own = id(side, own_slot);
    int const child = id(side, child_slot);
    try {
      ex_->post([this, side, own, child] {
        bump(runs_[static_cast<std::size_t>(own)]);
        inner_[static_cast<std::size_t>(side)] = ex_->spawn(counted(child));
        accepted_[static_cast<std::size_t>(child)].set(1);
      });
      accepted_[static_cast<std::size_t>(own)].set(1);
    } catch (std::logic_error const&) {
      // Refused, as for post: nothing runs, so no child.
    }
  }

  /// Joins the constructor's task from this (outside) thread.
  void join_outside(int side) {
    int const pre = id(side, pre_slot);
    tracked const v = pre_[static_cast<std::size_t>(side)].join();
    model::check(v.id() == static_cast<std::uint64_t>(pre), "join returned another task's value");
    model::check(runs_[static_cast<std::size_t>(pre)].get() == 1,
                 "join returned before the task ran, or its writes are not visible");
  }

  /// A task posted from outside joins the constructor's task on its worker: help-first, it
  /// runs other tasks (possibly the one it waits for) instead of blocking the worker.
  void join_inside(int side) {
    int const own = id(side, own_slot);
    int const pre = id(side, pre_slot);
    try {
      ex_->post(
          [this, side, own, pre, h = std::move(pre_[static_cast<std::size_t>(side)])]() mutable {
            bump(runs_[static_cast<std::size_t>(own)]);
            tracked const v = h.join();
            model::check(v.id() == static_cast<std::uint64_t>(pre),
                         "a join inside a task returned another task's value");
            model::check(runs_[static_cast<std::size_t>(pre)].get() == 1,
                         "a join inside a task returned before the task ran");
            joined_inside_[static_cast<std::size_t>(side)].set(1);
          });
      accepted_[static_cast<std::size_t>(own)].set(1);
    } catch (std::logic_error const&) {
      // Refused: the handle was dropped with the task (detached); its task still runs once.
    }
  }

  /// Drops the constructor's handle without joining: the task still runs once and its result
  /// is destroyed by whichever owner lets go last.
  void detach(int side) { auto dropped = std::move(pre_[static_cast<std::size_t>(side)]); }

  void shutdown() { ex_->shutdown(); }

  void finish() {
    // The destructor finishes every accepted task (and what they spawned), then joins.
    ex_.reset();
    for (std::size_t side = 0; side < 2; ++side) {
      for (auto* h : {&handles_[side], &inner_[side], &pre_[side]}) {
        if (h->valid()) {
          static_cast<void>(h->join());
        }
      }
      if (join_inside_[side]) {
        auto const own = static_cast<std::size_t>(id(static_cast<int>(side), own_slot));
        model::check(joined_inside_[side].get() == accepted_[own].get(),
                     "an accepted task that joins another never finished its join");
      }
    }
    for (std::size_t t = 0; t < tasks; ++t) {
      model::check(runs_[t].get() == accepted_[t].get(),
                   "an accepted task did not run exactly once, or a refused one ran");
    }
    model::check(tracked::live() == live_before_, "a task's result was leaked or destroyed twice");
  }

 private:
  static constexpr std::size_t tasks = 8;

  std::int64_t live_before_;
  std::array<model::plain<int>, tasks> runs_{};
  std::array<model::plain<int>, tasks> accepted_{};
  std::array<model::plain<int>, 2> joined_inside_{};
  std::array<bool, 2> join_inside_{};
  std::array<spindle::join_handle<tracked>, 2> pre_;
  std::array<spindle::join_handle<tracked>, 2> handles_;
  std::array<spindle::join_handle<tracked>, 2> inner_;
  std::optional<spindle::executor> ex_;
};

auto executor_ops() -> std::vector<operation<executor_fixture>> const& {
  static std::vector<operation<executor_fixture>> const ops{
      // post() from outside: runs exactly once, or is refused (logic_error) after shutdown.
      {"post", [](executor_fixture& f, int side) { f.post(side); }},
      // spawn() from outside: as post, and the handle's join returns the value once.
      {"spawn", [](executor_fixture& f, int side) { f.spawn(side); }},
      // A task spawns a child from its worker: the child runs once, even during shutdown.
      {"spawn_inside", [](executor_fixture& f, int side) { f.spawn_inside(side); }},
      // join() of a running or queued task from an outside thread: sleeps, is woken, once.
      {"join_outside", [](executor_fixture& f, int side) { f.join_outside(side); }},
      // join() inside a task: help-first waiting, no deadlock with two workers.
      {"join_inside", [](executor_fixture& f, int side) { f.join_inside(side); }},
      // Dropping a handle unjoined: the task still runs once, its result is destroyed once.
      {"detach", [](executor_fixture& f, int side) { f.detach(side); }},
      // shutdown(): finishes every accepted task, refuses later outside submissions.
      {"shutdown", [](executor_fixture& f, int /*side*/) { f.shutdown(); }},
  };
  return ops;
}

// ---- task_group ----------------------------------------------------------------------------

auto group_wait_op(std::string_view op) -> bool {
  return op == "wait" || op == "wait_again";
}

/// A task_group over an executor with two workers. Tasks are numbered per side as for the
/// executor: slot 0 spawned by the constructor for a waiting operation (so that its wait has
/// something to wait for), slot 1 the operation's own task, slot 2 a second task (the repeated
/// wait's, or the child of spawn_inside).
class group_fixture {
 public:
  static auto skip(std::string_view a, std::string_view b) -> char const* {
    if (group_wait_op(a) && group_wait_op(b)) {
      return "wait() from two threads at once is misuse the group reports by aborting "
             "(task_group.hpp); one thread's repeated wait is the wait_again row";
    }
    return nullptr;
  }

  group_fixture(std::string_view a, std::string_view b)
      : throwers_(static_cast<int>(a == "throw") + static_cast<int>(b == "throw")),
        ex_(2),
        g_(ex_) {
    std::array<std::string_view, 2> const names{a, b};
    for (int side = 0; side < 2; ++side) {
      if (group_wait_op(names[static_cast<std::size_t>(side)])) {
        spawn_counted(id(side, 0));
      }
    }
  }

  static auto id(int side, int slot) -> int { return side * 4 + slot; }

  /// Spawns a task into the group that counts its run, and expects it to run once.
  void spawn_counted(int task_id) {
    expected_[static_cast<std::size_t>(task_id)] = 1;
    spawn_task(task_id);
  }

  /// A task that spawns a second task into the group from its worker.
  void spawn_inside(int side) {
    int const own = id(side, 1);
    int const child = id(side, 2);
    expected_[static_cast<std::size_t>(own)] = 1;
    expected_[static_cast<std::size_t>(child)] = 1;
    g_.spawn([this, own, child] {
      bump(runs_[static_cast<std::size_t>(own)]);
      spawn_task(child);
    });
  }

  /// A task that throws: exactly one wait() of the group rethrows it.
  void spawn_throwing(int side) {
    int const own = id(side, 1);
    expected_[static_cast<std::size_t>(own)] = 1;
    g_.spawn([this, own] {
      bump(runs_[static_cast<std::size_t>(own)]);
      throw std::runtime_error("a group task failed");
    });
  }

  /// wait(), counting a rethrown task exception; then the task spawned before it has run.
  void wait(int side, int after_slot) {
    try {
      g_.wait();
    } catch (std::runtime_error const&) {
      bump(rethrown_[static_cast<std::size_t>(side)]);
    }
    model::check(runs_[static_cast<std::size_t>(id(side, after_slot))].get() == 1,
                 "wait() returned before a task spawned before it ran");
  }

  void finish() {
    try {
      g_.wait();
    } catch (std::runtime_error const&) {
      ++rethrown_last_;
    }
    for (std::size_t t = 0; t < tasks; ++t) {
      model::check(runs_[t].get() == expected_[t], "a group task did not run exactly once");
    }
    int const rethrown = rethrown_[0].get() + rethrown_[1].get() + rethrown_last_;
    // One thrower: exactly one wait rethrows. Two: the first wait after both failed rethrows
    // one and drops the other, or two waits rethrow one each.
    model::check(throwers_ == 0 ? rethrown == 0
                                : (throwers_ == 1 ? rethrown == 1 : rethrown >= 1 && rethrown <= 2),
                 "a task's exception was rethrown twice, or never");
  }

 private:
  static constexpr std::size_t tasks = 8;

  void spawn_task(int task_id) {
    g_.spawn([this, task_id] { bump(runs_[static_cast<std::size_t>(task_id)]); });
  }

  int throwers_;
  std::array<model::plain<int>, tasks> runs_{};
  // Written by the thread that spawns the task, read by finish() after joining it.
  std::array<int, tasks> expected_{};
  std::array<model::plain<int>, 2> rethrown_{};
  int rethrown_last_ = 0;
  spindle::executor ex_;
  spindle::task_group g_;
};

auto group_ops() -> std::vector<operation<group_fixture>> const& {
  static std::vector<operation<group_fixture>> const ops{
      // spawn() from outside, racing a wait: the task runs once (the wait may or may not
      // include it); the final wait does.
      {"spawn", [](group_fixture& f, int side) { f.spawn_counted(group_fixture::id(side, 1)); }},
      // wait(): returns only after the task spawned before it ran, and sees its writes.
      {"wait", [](group_fixture& f, int side) { f.wait(side, 0); }},
      // wait(), spawn, wait() again: the second wait is not woken early by a stale finisher.
      {"wait_again",
       [](group_fixture& f, int side) {
         f.wait(side, 0);
         f.spawn_counted(group_fixture::id(side, 2));
         f.wait(side, 2);
       }},
      // A group task spawns another into the group: a wait covers both.
      {"spawn_inside", [](group_fixture& f, int side) { f.spawn_inside(side); }},
      // A task throws: one wait rethrows it, once; the group stays usable.
      {"throw", [](group_fixture& f, int side) { f.spawn_throwing(side); }},
  };
  return ops;
}

// ---- parallel loops ------------------------------------------------------------------------

auto loop_op(std::string_view op) -> bool {
  return op == "parallel_for" || op == "parallel_reduce";
}

/// An executor with two workers and, per side, a range of three indices for a loop (grain 1,
/// so it may split at every index), a counted task for spawn and post.
class loops_fixture {
 public:
  static auto skip(std::string_view a, std::string_view b) -> char const* {
    if (!loop_op(a) && !loop_op(b)) {
      return "no loop in the pair: the same operations run in Pairs/ExecutorPairs";
    }
    return nullptr;
  }

  loops_fixture(std::string_view /*a*/, std::string_view /*b*/) { ex_.emplace(std::size_t{2}); }

  /// parallel_for over [0, 3) from outside: each index once and visible on return, or (racing
  /// shutdown) std::logic_error and no index at all.
  void parallel_for(int side) {
    auto& hits = hits_[static_cast<std::size_t>(side)];
    bool ran = true;
    try {
      spindle::parallel_for(*ex_, 0, indices, std::size_t{1},
                            [&hits](int i) { bump(hits[static_cast<std::size_t>(i)]); });
    } catch (std::logic_error const&) {
      ran = false;
    }
    check_hits(side, ran);
  }

  /// parallel_reduce over [0, 3): bit i from index i, so the sum is 7 exactly when each index
  /// was mapped once; or std::logic_error and no index, as for parallel_for.
  void parallel_reduce(int side) {
    auto& hits = hits_[static_cast<std::size_t>(side)];
    bool ran = true;
    try {
      int const sum = spindle::parallel_reduce(
          *ex_, 0, indices, 0,
          [&hits](int i) {
            bump(hits[static_cast<std::size_t>(i)]);
            return 1 << i;
          },
          [](int x, int y) { return x + y; });
      model::check(sum == 7, "parallel_reduce combined an index twice or missed one");
    } catch (std::logic_error const&) {
      ran = false;
    }
    check_hits(side, ran);
  }

  /// spawn() from outside and join it; refused after shutdown.
  void spawn(int side) {
    try {
      auto h = ex_->spawn([this, side] { bump(runs_[static_cast<std::size_t>(side)]); });
      accepted_[static_cast<std::size_t>(side)].set(1);
      h.join();
      model::check(runs_[static_cast<std::size_t>(side)].get() == 1,
                   "join returned before the task ran");
    } catch (std::logic_error const&) {
      // Refused: shutdown began.
    }
  }

  /// post() from outside; finish() checks it ran once (or was refused and never ran).
  void post(int side) {
    try {
      ex_->post([this, side] { bump(runs_[static_cast<std::size_t>(side)]); });
      accepted_[static_cast<std::size_t>(side)].set(1);
    } catch (std::logic_error const&) {
      // Refused: shutdown began.
    }
  }

  void shutdown() { ex_->shutdown(); }

  void finish() {
    ex_.reset();
    for (std::size_t side = 0; side < 2; ++side) {
      model::check(runs_[side].get() == accepted_[side].get(),
                   "an accepted task did not run exactly once, or a refused one ran");
    }
  }

 private:
  static constexpr int indices = 3;

  void check_hits(int side, bool ran) {
    for (auto const& h : hits_[static_cast<std::size_t>(side)]) {
      model::check(h.get() == (ran ? 1 : 0),
                   ran ? "a loop index did not run exactly once before the loop returned"
                       : "a loop refused at shutdown ran an index");
    }
  }

  std::array<std::array<model::plain<int>, indices>, 2> hits_{};
  std::array<model::plain<int>, 2> runs_{};
  std::array<model::plain<int>, 2> accepted_{};
  std::optional<spindle::executor> ex_;
};

auto loops_ops() -> std::vector<operation<loops_fixture>> const& {
  static std::vector<operation<loops_fixture>> const ops{
      // parallel_for from outside (a guest slot, or the injector): every index exactly once.
      {"parallel_for", [](loops_fixture& f, int side) { f.parallel_for(side); }},
      // parallel_reduce from outside: every index mapped and combined exactly once.
      {"parallel_reduce", [](loops_fixture& f, int side) { f.parallel_reduce(side); }},
      // spawn() and join from outside, competing with a loop for the workers.
      {"spawn", [](loops_fixture& f, int side) { f.spawn(side); }},
      // post() from outside, competing with a loop for the workers.
      {"post", [](loops_fixture& f, int side) { f.post(side); }},
      // shutdown(): a loop that raced it ran all of its indices or was refused whole.
      {"shutdown", [](loops_fixture& f, int /*side*/) { f.shutdown(); }},
  };
  return ops;
}

auto next_slot_owner_op(std::string_view op) -> bool {
  return op == "put" || op == "put_take";
}

/// A worker's next slot (detail/executor/next_slot.hpp) with its watch's arming: the owner puts
/// one task (after writing its payload) and arms the watch as push_resumed does, and may take
/// it back; the watch claims what it sees, or tries to rest. finish() takes, as the owner, what
/// is left, and checks that the task ran exactly once (owner or watch), that a claimer saw the
/// payload, and that a watch that rested was woken if the task stayed in the slot.
class next_slot_fixture {
 public:
  static auto skip(std::string_view a, std::string_view b) -> char const* {
    if (next_slot_owner_op(a) && next_slot_owner_op(b)) {
      return "both are owner operations: a slot belongs to one worker thread (worker_ctx.hpp)";
    }
    if (!next_slot_owner_op(a) && !next_slot_owner_op(b)) {
      return "both are watch operations: an executor has one watch thread (next_slot.hpp)";
    }
    return nullptr;
  }

  next_slot_fixture(std::string_view /*a*/, std::string_view /*b*/) {}

  void put(bool take_back) {
    payload_.set(7);
    slot_.put(&task_);
    if (arming_.after_put()) {
      woken_.set(1);
    }
    if (take_back) {
      if (spindle::detail::task* const t = slot_.take()) {
        model::check(t == &task_, "take returns the task put");
        bump(owner_runs_);
      }
    }
  }

  void claim() {
    spindle::detail::task* const t = slot_.peek();
    if (t != nullptr && slot_.claim(t)) {
      model::check(payload_.get() == 7, "the claimer sees what the owner wrote before the put");
      bump(watch_runs_);
    }
  }

  void rest() {
    if (arming_.try_rest([this] { return slot_.peek() != nullptr; })) {
      rested_.set(1);
    }
  }

  void finish() {
    spindle::detail::task* const left = slot_.take();
    if (left != nullptr) {
      model::check(rested_.get() == 0 || woken_.get() == 1,
                   "the watch rests while a task waits in a slot and nobody woke it");
      bump(owner_runs_);
    }
    model::check(owner_runs_.get() + watch_runs_.get() == 1, "the task ran exactly once");
    model::check(!slot_.occupied(), "the slot is empty after the owner's last take");
  }

 private:
  static void no_run(spindle::detail::task* /*t*/) noexcept {}

  spindle::detail::task task_{&no_run};
  model::plain<int> payload_;
  spindle::detail::next_slot slot_;
  spindle::detail::next_slot_arming arming_;
  model::plain<int> owner_runs_;
  model::plain<int> watch_runs_;
  model::plain<int> woken_;
  model::plain<int> rested_;
};

auto next_slot_ops() -> std::vector<operation<next_slot_fixture>> const& {
  static std::vector<operation<next_slot_fixture>> const ops{
      // The owner's put of a woken coroutine's resumption, with push_resumed's arming of the
      // watch; the task stays in the slot (the worker's task goes on running).
      {"put", [](next_slot_fixture& f, int /*side*/) { f.put(false); }},
      // The same, then the owner's take (its task returned or suspended).
      {"put_take", [](next_slot_fixture& f, int /*side*/) { f.put(true); }},
      // The watch's claim of the task it sees (without the two-looks rule, so every schedule
      // lets it try).
      {"claim", [](next_slot_fixture& f, int /*side*/) { f.claim(); }},
      // The watch's rest after looks that found nothing.
      {"rest", [](next_slot_fixture& f, int /*side*/) { f.rest(); }},
  };
  return ops;
}
}  // namespace

// The queues alone are cheap: every schedule within two preemptions (up to a budget), then
// PCT and random schedules on store buffers.
SPINDLE_OPERATION_MATRIX(DequePairs, deque_fixture, deque_ops(), queue_schedules());
SPINDLE_OPERATION_MATRIX(InjectorPairs, injector_fixture, injector_ops(), queue_schedules());
SPINDLE_OPERATION_MATRIX(NextSlotPairs, next_slot_fixture, next_slot_ops(), queue_schedules());

// Executor-based pairs: each execution runs two workers; PCT, random and PCT on TSO.
SPINDLE_OPERATION_MATRIX(ExecutorPairs, executor_fixture, executor_ops(), executor_schedules(160));
SPINDLE_OPERATION_MATRIX(TaskGroupPairs, group_fixture, group_ops(), executor_schedules(160));
SPINDLE_OPERATION_MATRIX(LoopPairs, loops_fixture, loops_ops(), executor_schedules(160));
