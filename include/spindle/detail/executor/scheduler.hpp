// SPDX-License-Identifier: BSL-1.0
#pragma once
// The executor's scheduler: the queues a task waits in (each worker's deque, the guest slots'
// deques, the injector) and the loop by which a worker finds, steals and runs tasks, parks, and
// decides that the executor has terminated. executor_core (executor_core.hpp) builds on it
// with the threads, the guest slots' entry and exit, waiting, error reporting and shutdown.
//
// Scheduling (crossbeam-deque's find-task loop, crossbeam-deque/src/lib.rs; tokio's
// multi_thread scheduler, tokio/src/runtime/scheduler/multi_thread/worker.rs):
// - Each worker owns a Chase-Lev `deque_owner<task*>` (LIFO). Tasks a worker submits go to its own
//   deque; tasks from other threads go to the injector (detail/executor/injector.hpp).
// - find_task: every 61st tick the injector first (tokio/Go's fairness interval, so local
//   spawning cannot starve outside submissions), then the own deque, then the injector (a
//   batch: len / workers + 1, at most 32), then steal_batch_and_pop from victims in a random
//   rotation, repeated while a steal says `retry`.
// - Searching and parking follow tokio's idle protocol with an explicit Dekker pairing; see
//   detail/executor/idle_set.hpp for the argument and its tags (N1), (P1), and (M1) for a batch
//   that a worker moves into its own deque (from the injector, or stolen from a victim's deque).
// - Help-first waiting: a worker that waits for a completion (join, join_handle::join,
//   task_group::wait) runs other tasks meanwhile and parks only when nothing is runnable.
//
// Termination: once shutdown() (executor_core.hpp) has closed the injector and set
// `stopping_`, workers keep running tasks, including tasks those tasks spawn. A worker that
// finds nothing and sees every worker idle at top level (not inside a task), no guest in a slot
// and every queue empty declares `terminated_`, and all workers exit (try_terminate()). No
// accepted task is dropped: each sits in a queue or is running, and either keeps some worker
// out of the idle state.
//
// Synchronization:
//   stopping_    set once by shutdown() (seq_cst) after closing the injector; read by idle
//                workers. Once a worker sees it, no outside push can follow (the injector's
//                push lock orders every successful push before the close).
//   idle_top_    workers at top level between their decision to park and their wake.
//   terminated_  set once by the last idle worker; read by workers.
//   started_     worker threads running; set before they start (or lowered before shutdown
//                when a thread failed to start).
//   guests_      guests in their slots; seq_cst RMWs (G1)/(G2) in executor_core.hpp, read by
//                try_terminate().
//   coroutines_  coroutines bound to this executor (detail/coro/resume.hpp, Accounting): raised
//                when one is spawned or scheduled onto it, lowered when it ends or moves away;
//                seq_cst RMWs, read by try_terminate(). A bound coroutine is accepted work, also
//                while it is suspended: shutdown waits for it, and its resumption is queued
//                even after the injector closed.
//   worker_ctx   see worker_ctx.hpp.
//   tracer_, trace_context_  set before any thread starts (executor_options::trace); read by
//                every thread. Diagnostics (worker_ctx::diag, the trace calls) are described in
//                detail/executor/diag_state.hpp and spindle/diagnostics.hpp.

#include <spindle/deque.hpp>
#include <spindle/detail/executor/completion.hpp>
#include <spindle/detail/executor/idle_set.hpp>
#include <spindle/detail/executor/injector.hpp>
#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/executor/worker_ctx.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/backoff.hpp>
#include <spindle/detail/sync/cache_padded.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/parker.hpp>
#include <spindle/diagnostics.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// Runs of a worker's `next` slot in a row before its task goes to the deque (tokio allows 3
/// per tick; a longer streak keeps a coroutine ping-pong on one warm core longer).
inline constexpr std::uint32_t max_next_streak = 16;

/// Checks the injector first every this many tasks (tokio and Go use 61).
inline constexpr std::uint32_t injector_interval = 61;
/// Most tasks a worker moves from the injector at once.
inline constexpr std::size_t injector_batch = 32;
/// Extra yields (each followed by a look at every queue) that a top-level worker spends after
/// its backoff before it parks, once per stretch of idleness. With one outside producer and
/// workers that empty the injector faster than it fills, workers otherwise parked between
/// bursts and the producer paid a futex wake (a system call) every few tasks; a yield costs
/// about a microsecond when nothing else wants the core, and gives the core away when
/// something does. Zero under the model checker, whose schedules would only grow.
#if defined(SPINDLE_MODEL_CHECK)
inline constexpr std::uint32_t linger_yields = 0;
#else
inline constexpr std::uint32_t linger_yields = 64;
#endif
/// Slots in which threads that are not workers take part in the work they wait for (see
/// "Guests" in executor_core.hpp).
inline constexpr std::size_t guest_slots = 2;

/// The queues and the worker loop of one executor. Not used alone: executor_core derives from
/// it and owns the threads that run the loop; the fields are protected for it.
class scheduler {
 public:
  scheduler(scheduler const&) = delete;
  auto operator=(scheduler const&) -> scheduler& = delete;

  [[nodiscard]] auto worker_count() const noexcept -> std::size_t { return workers_; }

  /// The calling thread's context if it is a worker of this executor or a guest in one of its
  /// slots (see enter_guest()).
  [[nodiscard]] auto local() const noexcept -> worker_ctx* {
    worker_ctx* const w = current_worker;
    return w != nullptr && w->core == this ? w : nullptr;
  }

  /// The calling thread's context if it is one of this executor's worker threads.
  [[nodiscard]] auto own_worker() const noexcept -> worker_ctx* {
    worker_ctx* const w = local();
    return w != nullptr && !w->guest ? w : nullptr;
  }

  /// The parker `w` sleeps on (a completion's fixed waiter for jobs `w` waits for).
  [[nodiscard]] auto parker_of(worker_ctx& w) noexcept -> parker& { return *w.sleeper; }

  /// Queues `t`. On a worker (or guest) of this executor: its own deque. Elsewhere: the
  /// injector.
  /// Throws: std::logic_error after shutdown (t is untouched); std::bad_alloc.
  void submit(task* t) {
    t->isolation = current_isolation;
    if (worker_ctx* const w = local()) {
      // Before the push: once queued, the task may be stolen, run and freed at once.
      if (tracer_ != nullptr) [[unlikely]] {
        trace(trace_kind::spawned, w, t);
      }
      w->tasks.push(t);
      // (N1): a task that outlives its spawner's attention (the spawner may block on
      // something else) must not sit in a deque while every other worker sleeps; pairs with
      // the fence after (P1) in park(). Only join skips this, see push_local().
      fence_seq_cst();
      if (idle_.should_wake()) {
        idle_.wake_one();
      }
      // (I2) after the same fence: an isolated waiter may need this task (its region's).
      wake_isolated();
    } else {
      submit_outside(t);
    }
  }

  /// Queues the resumption of a suspended coroutine: as submit(), but accepted during shutdown
  /// (the coroutine was accepted before), and never throwing: if the queue cannot grow, the
  /// task runs here, on the waker's thread.
  ///
  /// On a worker the resumption goes to the worker's `next` slot (worker_ctx.hpp) without waking
  /// anyone: the worker runs it as soon as the current task returns or suspends, which for two
  /// coroutines passing messages is at once, on a warm cache (tokio's LIFO slot, tokio
  /// src/runtime/scheduler/multi_thread/worker.rs, schedule_local). A resumption already in
  /// the slot moves to the deque, with the usual wake-up, so it can be stolen. What keeps the
  /// slot live: a worker about to block its thread in a channel wait hands the slot to its
  /// deque first (flush_next, through detail::before_blocking), find_task takes the slot at
  /// most `max_next_streak` times in a row before it yields it to the deque, and the executor's
  /// next-slot watch (detail/executor/next_slot.hpp) queues a resumption that stayed in the slot
  /// for a period while the worker ran one task (a task that blocks its thread by other means,
  /// or computes on after the wake). Where the watch could not start, resumptions go to the
  /// deque (next_unwatched_).
  ///
  /// Inside an isolation region the resumption belongs to no region: the region's isolated
  /// waits never run it, and take their own tasks from under it (executor_core.hpp,
  /// wait_isolated(), which also hands the `next` slot to the deque before it looks).
  void push_resumed(task* t) noexcept {
    // A resumption belongs to no isolation region: a coroutine waits without holding a
    // thread, so no isolated wait depends on running it. Its node is reused across resumptions,
    // so the field is reset here.
    t->isolation = 0;
    worker_ctx* const w = local();
    // relaxed: set once, before the first coroutine binds (see next_unwatched_).
    if (w != nullptr && !w->guest && !next_unwatched_.load(std::memory_order_relaxed)) {
      task* const displaced = w->next.take();
      w->next.put(t);
      if (next_arming_.value.after_put()) [[unlikely]] {
        wake_next_watch();
      }
      if (displaced != nullptr) {
        push_announced(w, displaced);
      }
      return;
    }
    push_announced(w, t);
  }

  /// Wakes the resting next-slot watch, which an owner's after_put() has just armed again.
  void wake_next_watch() noexcept {
    // acquire: pairs with the release store that publishes the watch. A watch that rests was
    // published before (only a running watch can rest).
    if (next_slot_watch* const watch = next_watch_.load(std::memory_order_acquire)) {
      watch->wake();
    }
  }

  /// Moves the calling worker's `next` task to its deque, where thieves see it (with the (N1)
  /// wake-up): called before the worker's thread blocks outside the scheduler.
  void flush_next(worker_ctx& w) noexcept {
    if (task* const t = w.next.take()) {
      push_announced(&w, t);
    }
  }

  /// One look of the next-slot watch (detail/executor/next_slot.hpp), on the watch's thread: a
  /// worker's slot that holds the task it held at the last look, while the worker started no
  /// task in between, is stuck behind the task the worker runs; the watch claims that task and
  /// queues it in the injector, where any worker takes it. Returns whether any slot held a
  /// task.
  auto look_at_next_slots() noexcept -> bool {
    bool any = false;
    for (std::size_t i = 0; i < workers_; ++i) {
      worker_ctx& w = *ctxs_[i];
      next_seen& seen = next_seen_[i];
      task* const t = w.next.peek();
      if (t == nullptr) {
        seen = {};
        continue;
      }
      any = true;
      // relaxed: a count that moves when the worker starts a task; the claim decides.
      std::uint64_t const runs = w.counters.value.tasks_run.load(std::memory_order_relaxed);
      if (t == seen.t && runs == seen.runs && w.next.claim(t)) {
        seen = {};
        worker_counters::bump(w.counters.value.stuck_resumptions);
        push_announced(nullptr, t);
        continue;
      }
      seen = {t, runs};
    }
    return any;
  }

  /// join's push. Onto `w`'s public deque, waking a sleeper if nobody searches. No (N1)
  /// fence: join's owner pops the job back itself unless a thief took it, so a missed wake
  /// costs parallelism, never progress (rayon makes the same trade for its local jobs). A
  /// fence per fork would cost about as much as the rest of the fork.
  ///
  /// With executor_options::private_joins on, and while every other worker is busy (none
  /// searches, none sleeps: one relaxed load of the idle set's state word), the job goes to
  /// the private end of `w`'s split deque instead (worker_ctx::private_jobs), with plain
  /// stores, and join pops it back with plain loads: no thief can reach it, so neither side
  /// needs the store-load ordering of the Chase-Lev take. Once somebody may want work, the
  /// next fork moves every private job to the public deque, oldest first, and pushes its own
  /// after them.
  ///
  /// This is the split deque of Lace (van Dijk and van de Pol, "Lace: non-blocking split
  /// deque for work-stealing", Euro-Par 2014 workshops), with the idle set's state word in
  /// place of Lace's per-deque steal request flag: a worker that runs out of work searches,
  /// and a searcher (or a sleeper) is what makes the next fork publish. A private job is
  /// published late only while its owner runs code that neither forks nor waits; the owner
  /// always runs it itself in the end, so the delay costs parallelism, never progress, unless
  /// that code blocks its thread. publish_before_waiting() covers every wait of the library
  /// (a join's or task group's wait, a channel's, a blocking call through blocking_hook), and
  /// the option's contract (executor_options.hpp) forbids `a` to wait for `b` by other means.
  /// That contract is why the option is off by default: a thief cannot take a private job
  /// without its owner's help, which Lace gets by polling and the owner here gives only at a
  /// fork or a wait.
  /// Throws: std::bad_alloc when the deque cannot grow (t is not queued).
  SPINDLE_ALWAYS_INLINE void push_local(worker_ctx& w, task* t) {
    t->isolation = current_isolation;
    if (private_joins_) {
      if (w.private_count < worker_ctx::private_capacity && !idle_.anyone_idle()) {
        w.private_jobs[w.private_count++] = t;
        return;
      }
      if (w.private_count != 0) {
        publish_private(w);
      }
    }
    w.tasks.push(t);
    if (idle_.should_wake()) [[unlikely]] {
      idle_.wake_one();
    }
  }

  /// Moves `w`'s private join jobs to its public deque, oldest first, where thieves can take
  /// them; announces nothing (the callers do). Called by the owning thread only. A job the
  /// deque cannot take (it failed to grow) runs here instead, as in push_announced().
  [[gnu::noinline]] void publish_private(worker_ctx& w) noexcept {
    std::uint32_t const n = std::exchange(w.private_count, 0);
    for (std::uint32_t i = 0; i < n; ++i) {
      task* const t = w.private_jobs[i];
      try {
        w.tasks.push(t);
      } catch (...) {
        run(w, t);
      }
    }
  }

  /// Before the calling thread (a worker or a guest on slot `w`) waits: its private join jobs
  /// go to its deque with the (N1) wake-up, so that a job a waiter depends on is never hidden
  /// from the workers that could run it while its owner sleeps.
  void publish_before_waiting(worker_ctx& w) noexcept {
    if (w.private_count == 0) [[likely]] {
      return;
    }
    publish_private(w);
    // (N1) fence: the jobs are in the deque before we look for sleepers; pairs with the fence
    // after (P1) in park() (detail/executor/idle_set.hpp).
    fence_seq_cst();
    if (idle_.should_wake()) {
      idle_.wake_one();
    }
  }

  /// Everything the calling thread holds back from thieves (its `next` slot, its private join
  /// jobs) goes to its deque, announced: called through detail::before_blocking when the
  /// thread is about to block outside the scheduler (a channel wait, a blocking call).
  void before_blocking(worker_ctx& w) noexcept {
    flush_next(w);
    publish_before_waiting(w);
    if (!w.deque.empty()) {
      // (I2): what this thread's deque holds may be an isolated waiter's, and this thread
      // is about to stop running it.
      fence_seq_cst();
      wake_isolated();
    }
  }

  /// Runs a task popped by the calling worker, inside the isolation region it was queued in
  /// (spindle/isolate.hpp): its waits then run only tasks of that region.
  ///
  /// Diagnostics: the worker's state word says it runs a task one level deeper while `t`
  /// runs (two relaxed stores, detail/executor/diag_state.hpp), and a tracer, if set, hears of
  /// the start and the end (one load and a branch when none is).
  void run(worker_ctx& w, task* t) noexcept {
    worker_counters::bump(w.counters.value.tasks_run);
    std::uint32_t const outer = w.diag.value.begin_task();
    void const* const id = t;
    if (tracer_ != nullptr) [[unlikely]] {
      trace(trace_kind::started, &w, id);
    }
    std::uint64_t const region = t->isolation;
    if (region == current_isolation) [[likely]] {
      t->run(t);
    } else {
      std::uint64_t const saved = std::exchange(current_isolation, region);
      t->run(t);  // may free *t: region was read before
      current_isolation = saved;
    }
    w.diag.value.restore(outer);
    if (tracer_ != nullptr) [[unlikely]] {
      trace(trace_kind::finished, &w, id);
    }
  }

  /// Tells the tracer (executor_options::trace) of an event on `w` (nullptr: not a worker or
  /// guest of this executor). `id` is the task's address, only an identity: the task may
  /// have been freed.
  [[gnu::noinline, gnu::cold]] void trace(trace_kind kind, worker_ctx const* w,
                                          void const* id) const noexcept {
    trace_event e;
    e.kind = kind;
    e.worker = w != nullptr ? w->index : trace_event::no_worker;
    e.task = id;
    tracer_(trace_context_, e);
  }

  /// At a quiescent point (every thread waits): whether a thread waits while a join job of
  /// its own is still private, where no other worker can run it.
  [[nodiscard]] auto private_jobs_stranded() const noexcept -> char const* {
    for (auto const& w : ctxs_) {
      if (w->private_count != 0) {
        return "a join's job stays private while its owner's thread waits";
      }
    }
    return nullptr;
  }

  /// The no-lost-wake-up property of the idle protocol as a checkable invariant: what breaks
  /// it, or nullptr. It holds whenever every thread is blocked (waiting to be woken): then no
  /// task waits in a queue another worker can take from while some worker sleeps and nobody
  /// searches. Between two steps of the protocol it may
  /// not hold (a parking worker is counted asleep before its re-check). The model tests check
  /// it at every quiescent point (tests/model/liveness_test.cpp). A coroutine resumption in a
  /// worker's `next` slot is not counted: only its owner takes it, after the running task.
  /// Nor may a thread wait while it holds a private join job (push_local): it is checked first.
  [[nodiscard]] auto lost_wake_up() const noexcept -> char const* {
    if (char const* const stranded = private_jobs_stranded()) {
      return stranded;
    }
    // acquire: as the other loads of terminated_ (pairs with the release store in
    // try_terminate()); at a quiescent point every store has long been visible anyway.
    if (terminated_.load(std::memory_order_acquire) || idle_.sleeping_count() == 0 ||
        idle_.searching_count() != 0) {
      return nullptr;
    }
    return work_visible() ? "a task waits in a queue while a worker sleeps and nobody searches"
                          : nullptr;
  }

 protected:
  /// Builds the contexts and deques of `workers` workers and of the guest slots; starts no
  /// thread.
  /// Throws: std::invalid_argument if workers == 0; std::bad_alloc.
  explicit scheduler(std::size_t workers)
      : idle_(check_count(workers)),
        workers_(workers),
        isolated_asleep_(std::make_unique<cache_padded<atomic<bool>>[]>(workers + guest_slots)),
        next_seen_(std::make_unique<next_seen[]>(workers)) {
    ctxs_.reserve(workers + guest_slots);
    stealers_.reserve(workers + guest_slots);
    for (std::size_t i = 0; i < workers + guest_slots; ++i) {
      ctxs_.push_back(std::make_unique<worker_ctx>(this, i, i >= workers));
      auto& ctx = *ctxs_.back();
      ctx.sleeper = ctx.guest ? &ctx.guest_parker : &idle_.parker_of(i);
      stealers_.push_back(ctxs_.back()->deque.stealer());
    }
  }
  ~scheduler() = default;

  static auto check_count(std::size_t workers) -> std::size_t {
    if (workers == 0) {
      throw std::invalid_argument("spindle::executor needs at least one worker");
    }
    return workers;
  }

  /// Queues a task that must not be refused or lost: onto `w`'s deque (a worker of this
  /// executor), else into the injector even when it is closed; then (N1). If the queue cannot
  /// grow, the task runs here instead.
  void push_announced(worker_ctx* w, task* t) noexcept {
    try {
      if (w != nullptr) {
        w->tasks.push(t);
      } else {
        // Not counted against injector_capacity, and never refused: the task was accepted
        // before (a coroutine's resumption, or a task moved off a deque);
        // executor_options::injector_capacity bounds new submissions only.
        static_cast<void>(injector_.push(t, injected::accepted));
      }
    } catch (...) {
      t->run(t);
      return;
    }
    // (N1), as in submit().
    fence_seq_cst();
    if (idle_.should_wake()) {
      idle_.wake_one();
    }
    if (w != nullptr) {
      // (I2), after the same fence.
      wake_isolated();
    }
  }

  /// Bounded injector (executor_options::injector_capacity): takes one of the capacity's
  /// places for a task about to be pushed from outside. False when every place is taken. The
  /// place is given back by the worker that takes the task (give_back_room) or by
  /// cancel_room() when the push fails.
  [[nodiscard]] auto try_take_room() noexcept -> bool {
    // relaxed: a first guess for the CAS below.
    std::size_t q = queued_outside_.value.load(std::memory_order_relaxed);
    do {
      if (q >= injector_capacity_) {
        return false;
      }
      // seq_cst: (R1) in wait_for_room(): a blocked submitter's re-check; relaxed on failure:
      // the loop re-reads.
    } while (!queued_outside_.value.compare_exchange_weak(q, q + 1, std::memory_order_seq_cst,
                                                          std::memory_order_relaxed));
    return true;
  }

  /// Gives back a place taken by try_take_room() for a push that did not happen.
  void cancel_room() noexcept { give_back_room(1); }

  /// Sleeps (on a futex, no spinning) until a place may have been given back or shutdown
  /// began; `epoch` was read before the caller's last failed try_take_room(). The caller
  /// tries again after it returns.
  void wait_for_room(std::uint32_t epoch) noexcept {
    // (R1) seq_cst: count ourselves among the waiters, then re-check; pairs with (R2) in
    // give_back_room(): either that worker sees us and bumps the epoch, or our re-check sees
    // the place it gave back.
    room_waiters_.value.fetch_add(1, std::memory_order_seq_cst);
    // seq_cst: see (R1); a place free now, or a close, ends the wait at once.
    if (queued_outside_.value.load(std::memory_order_seq_cst) >= injector_capacity_ &&
        !stopping_.load(std::memory_order_seq_cst)) {
      futex_wait(room_epoch_.value, epoch);
    }
    // seq_cst: as (R1).
    room_waiters_.value.fetch_sub(1, std::memory_order_seq_cst);
  }

  /// The epoch a submitter reads before it tries, for wait_for_room().
  [[nodiscard]] auto room_epoch() const noexcept -> std::uint32_t {
    // acquire: pairs with the release increments in give_back_room() and close_room().
    return room_epoch_.value.load(std::memory_order_acquire);
  }

  /// `n` tasks counted by try_take_room() left the injector: give their places back and wake
  /// the submitters that wait for one.
  void give_back_room(std::size_t n) noexcept {
    // (R2) seq_cst: the places are free before we look for waiters; pairs with (R1).
    queued_outside_.value.fetch_sub(n, std::memory_order_seq_cst);
    // seq_cst: see (R2).
    if (room_waiters_.value.load(std::memory_order_seq_cst) != 0) {
      // release: pairs with the acquire load in room_epoch().
      room_epoch_.value.fetch_add(1, std::memory_order_release);
      futex_wake_all(room_epoch_.value);
    }
  }

  /// Shutdown: submitters asleep in wait_for_room() wake and find the executor stopping.
  void close_room() noexcept {
    // release: pairs with the acquire load in room_epoch(); stopping_ was set before.
    room_epoch_.value.fetch_add(1, std::memory_order_release);
    futex_wake_all(room_epoch_.value);
  }

  /// Queues `t`, which took a place with try_take_room() (or needs none: no bound), from a
  /// thread that is not a worker or guest: as submit_outside(), but reports a closed injector
  /// instead of throwing (and gives the place back). Throws: std::bad_alloc (place given
  /// back).
  [[nodiscard]] auto push_outside(task* t) -> bool {
    t->isolation = current_isolation;
    // Before the push: once queued, the task may run, end and be freed at once.
    if (tracer_ != nullptr) [[unlikely]] {
      trace(trace_kind::spawned, nullptr, t);
    }
    bool pushed = false;
    try {
      pushed = injector_.push(t);
    } catch (...) {
      if (injector_capacity_ != 0) {
        cancel_room();
      }
      throw;
    }
    if (!pushed) {
      if (injector_capacity_ != 0) {
        cancel_room();
      }
      return false;
    }
    // (N1), as in submit_outside().
    fence_seq_cst();
    if (idle_.should_wake()) {
      idle_.wake_one();
    }
    return true;
  }

  /// Whether shutdown began (no more tasks from outside).
  [[nodiscard]] auto stopping() const noexcept -> bool {
    // seq_cst: pairs with the store in shutdown(); a hint for try_spawn, whose push re-checks
    // under the injector's lock.
    return stopping_.load(std::memory_order_seq_cst);
  }

  /// Whether the injector is bounded (executor_options::injector_capacity).
  [[nodiscard]] auto bounded() const noexcept -> bool { return injector_capacity_ != 0; }

  void submit_outside(task* t) {
    if (injector_capacity_ != 0) [[unlikely]] {
      // Spawn/post from outside on a bounded executor: wait for a place, then push.
      for (;;) {
        std::uint32_t const epoch = room_epoch();
        if (try_take_room()) {
          break;
        }
        // seq_cst: pairs with the store in shutdown(), which close_room() follows.
        if (stopping_.load(std::memory_order_seq_cst)) {
          throw std::logic_error("spindle::executor: spawn or post after shutdown began");
        }
        wait_for_room(epoch);
      }
      if (!push_outside(t)) {
        throw std::logic_error("spindle::executor: spawn or post after shutdown began");
      }
      return;
    }
    t->isolation = current_isolation;
    if (tracer_ != nullptr) [[unlikely]] {
      trace(trace_kind::spawned, nullptr, t);
    }
    if (!injector_.push(t)) {
      throw std::logic_error("spindle::executor: spawn or post after shutdown");
    }
    // (N1): the push is published before we look for sleepers; pairs with the fence after
    // (P1) in next_task(): either we see the sleeper or its re-check sees the task.
    fence_seq_cst();
    if (idle_.should_wake()) {
      idle_.wake_one();
    }
  }

  auto next_random(worker_ctx& w) noexcept -> std::uint32_t {
    // xorshift32: victim rotation only.
    w.rng ^= w.rng << 13U;
    w.rng ^= w.rng >> 17U;
    w.rng ^= w.rng << 5U;
    return w.rng;
  }

  /// A batch from the injector: returns the first task and pushes the others into w's deque,
  /// then announces them (announce_moved()) if any are left there.
  auto from_injector(worker_ctx& w) noexcept -> task* {
    bool moved = false;
    // Submissions among the tasks taken: each holds a place of a bounded injector, which
    // tasks accepted earlier (coroutine resumptions) do not.
    std::size_t submissions = 0;
    task* const first = injector_.pop_batch(
        workers_, injector_batch,
        [&w, &moved](task* t) noexcept {
          // The deque grows by allocation; if that fails, run the task here instead of losing
          // it.
          try {
            w.tasks.push(t);
            moved = true;
          } catch (...) {
            t->run(t);
          }
        },
        &submissions);
    if (moved) {
      announce_moved(w);
      // (I2): the batch may hold an isolated waiter's tasks (queued by an outside thread in
      // its region). The fence orders the batch's publication before the look for waiters.
      fence_seq_cst();
      wake_isolated();
    }
    if (injector_capacity_ != 0 && submissions != 0) [[unlikely]] {
      give_back_room(submissions);
    }
    return first;
  }

  /// (M1) in detail/executor/idle_set.hpp: tasks a batch moved into w's deque (from the injector or
  /// from a victim's deque) were invisible to every other worker's (P1) re-check while in transit,
  /// and the (N1) of whoever queued them may have skipped its wake because of that re-check.
  /// So the mover announces them again once they are in its deque. A searcher leaves that to
  /// found_work(): the searching count it drops there with a seq_cst RMW, after the batch was
  /// published, plays the part of the (N1) fence, and the last searcher wakes a sleeper. A
  /// worker that is not searching runs (N1) itself. Called only when the batch left a task in
  /// the deque: a batch of one is the task run next, which keeps this worker awake.
  ///
  /// tokio makes the same check later: a worker that is not searching and holds more than the
  /// task it runs next notifies a parked worker (tokio/src/runtime/scheduler/multi_thread/
  /// worker.rs, Core::should_notify_others, checked in Context::park_timeout, which runs at the
  /// next maintenance tick). Here a task may block its worker until a task it waits for runs
  /// (a future set by a task queued after it), so the announcement cannot wait for a tick.
  void announce_moved(worker_ctx& w) noexcept {
    if (w.searching) {
      return;
    }
    // (N1) fence: the release store of our deque's bottom that published the batch comes
    // before our look for sleepers; pairs with the fence after (P1) in park(): either we see
    // the sleeper or its re-check sees the batch in our deque.
    fence_seq_cst();
    if (idle_.should_wake()) {
      idle_.wake_one();
    }
  }

  /// Up to four rounds over every other deque (workers' and guests') from a random start,
  /// taking with `take(stealer)`; stops early when no victim said `retry`.
  template <class Take>
  auto steal_rounds(worker_ctx& w, Take&& take) noexcept -> task* {
    std::size_t const n = stealers_.size();
    for (int round = 0; round < 4; ++round) {
      bool retry = false;
      std::size_t const start = next_random(w) % n;
      for (std::size_t k = 0; k < n; ++k) {
        std::size_t const v = (start + k) % n;
        if (v == w.index) {
          continue;
        }
        auto r = take(stealers_[v]);
        if (r.is_stolen()) {
          return *r.value;
        }
        retry = retry || r.is_retry();
      }
      if (!retry) {
        return nullptr;
      }
    }
    return nullptr;
  }

  /// A worker's steal: about half of a victim's deque into its own, and the first one to run.
  /// Only a searcher steals, so found_work() announces what the batch left in w's deque
  /// ((M1) in detail/executor/idle_set.hpp, announce_moved()).
  auto steal(worker_ctx& w) noexcept -> task* {
    SPINDLE_ASSERT(w.searching, "a worker stole a batch without searching");
    auto& counters = w.counters.value;
    task* const t = steal_rounds(w, [&](spindle::stealer<task*>& victim) {
      worker_counters::bump(counters.steal_attempts);
      return victim.steal_batch_and_pop(w.deque);
    });
    if (t != nullptr) {
      worker_counters::bump(counters.tasks_stolen);
      if (tracer_ != nullptr) [[unlikely]] {
        trace(trace_kind::stolen, &w, t);
      }
      if (!w.deque.empty()) {
        // (I2): the rest of the batch moved from the victim's deque, where an isolated waiter
        // may have looked for its region's tasks and gone to sleep, into ours. The fence
        // orders the batch's publication (the release store of our bottom) before the look.
        fence_seq_cst();
        wake_isolated();
      }
    }
    return t;
  }

  /// One pass over every place a task can be.
  auto find_task(worker_ctx& w) noexcept -> task* {
    if (++w.tick % injector_interval == 0) {
      if (task* t = from_injector(w)) {
        return t;
      }
    }
    // Null also when the next-slot watch took the slot's task (it is in the injector then).
    if (task* const t = w.next.take()) {
      if (++w.next_streak <= max_next_streak) {
        return t;
      }
      // Two coroutines passing messages would keep the worker to themselves: let the slot's
      // task queue up behind the deque, where others may steal it.
      w.next_streak = 0;
      push_announced(&w, t);
    } else {
      w.next_streak = 0;
    }
    if (auto t = w.tasks.pop_lifo()) {
      return *t;
    }
    if (task* t = from_injector(w)) {
      return t;
    }
    if (!w.searching) {
      w.searching = idle_.try_begin_search();
      if (!w.searching) {
        return nullptr;
      }
    }
    return steal(w);
  }

  /// Called when a searcher found work: the last searcher wakes the next sleeper. This also
  /// announces whatever a batch the searcher took left in its deque: (M1) in
  /// detail/executor/idle_set.hpp.
  void found_work(worker_ctx& w) noexcept {
    if (w.searching) {
      w.searching = false;
      if (idle_.end_search() && idle_.should_wake()) {
        idle_.wake_one();
      }
    }
  }

  /// Whether any queue holds a task; run after a (P1) fence.
  [[nodiscard]] auto work_visible() const noexcept -> bool {
    if (!injector_.looks_empty()) {
      return true;
    }
    for (auto const& s : stealers_) {
      if (!s.empty()) {
        return true;
      }
    }
    return false;
  }

  /// The next task for worker `w`, or nullptr when `until` is set (helping wait) or, at top
  /// level (`until == nullptr`), when the executor has terminated.
  auto next_task(worker_ctx& w, completion* until) noexcept -> task* {
    backoff spin;
    std::uint32_t lingered = 0;
    for (;;) {
      if (until != nullptr && until->is_set()) {
        // Back to the waiting task: a searcher must not stay counted while it runs it, or
        // notifiers would skip waking sleepers for as long as that task takes.
        found_work(w);
        return nullptr;
      }
      if (task* t = find_task(w)) {
        found_work(w);
        return t;
      }
      if (!spin.is_completed()) {
        spin.snooze();
        continue;
      }
      if (until == nullptr && lingered < linger_yields) {
        // A worker that just ran a task keeps looking a little longer before it parks: see
        // linger_yields.
        ++lingered;
        thread_yield();
        continue;
      }
      if (until == nullptr) {
        // acquire: pairs with the release store of terminated_ in try_terminate().
        if (terminated_.load(std::memory_order_acquire)) {
          return nullptr;
        }
      } else if (!until->arm(&idle_.parker_of(w.index))) {
        found_work(w);
        return nullptr;
      }
      if (park(w, until)) {
        return nullptr;
      }
      spin.reset();
    }
  }

  /// Parks worker `w` unless work turns up. Returns true when the worker must exit.
  auto park(worker_ctx& w, completion* until) noexcept -> bool {
    bool const top = until == nullptr;
    if (top) {
      // seq_cst: ordered with the quiescence check's load in try_terminate().
      idle_top_.value.fetch_add(1, std::memory_order_seq_cst);
    }
    idle_.prepare_park(w.index, w.searching);
    w.searching = false;
    // (P1) fence: our registration as a sleeper is visible before we re-check the queues;
    // pairs with the notifier's fence (N1) in submit_outside() (see detail/executor/idle_set.hpp).
    fence_seq_cst();
    bool exit = false;
    bool const work = work_visible();
    // acquire: pairs with the release store in try_terminate(); a worker that registers after
    // the terminating worker's wake_all() would otherwise sleep for ever.
    if (top && terminated_.load(std::memory_order_acquire)) {
      w.searching = idle_.cancel_park(w.index);
      exit = true;
    } else if (work || (until != nullptr && until->is_set())) {
      w.searching = idle_.cancel_park(w.index);
      if (work && !w.searching) {
        // Back as a searcher, whatever the throttle says: a notifier may have skipped its wake
        // because this worker was searching, and the task this worker takes next need not be
        // that notifier's (it may take another from the injector). Whichever it takes,
        // found_work() then ends the search and, as the last searcher, wakes a sleeper for
        // the rest. See "Searchers that find work while parking" in idle_set.hpp.
        w.searching = idle_.force_begin_search();
      }
    } else if (top && try_terminate()) {
      w.searching = idle_.cancel_park(w.index);
      exit = true;
    } else {
      worker_counters::bump(w.counters.value.times_parked);
      // The sleep is published as it begins, so metrics() counts it as parked while it lasts.
      w.counters.value.begin_sleep(std::chrono::steady_clock::now());
      std::uint32_t const awake =
          w.diag.value.set_state(top ? worker_state::parked : worker_state::waiting_asleep);
      if (tracer_ != nullptr) [[unlikely]] {
        trace(trace_kind::parked, &w, nullptr);
      }
      idle_.park(w.index);
      w.diag.value.restore(awake);
      if (tracer_ != nullptr) [[unlikely]] {
        trace(trace_kind::woken, &w, nullptr);
      }
      w.counters.value.end_sleep(std::chrono::steady_clock::now());
      worker_counters::bump(w.counters.value.times_woken);
      w.searching = idle_.cancel_park(w.index);
      // acquire: pairs with the release store in try_terminate().
      exit = top && terminated_.load(std::memory_order_acquire);
    }
    if (top) {
      // seq_cst: as the increment above.
      idle_top_.value.fetch_sub(1, std::memory_order_seq_cst);
    }
    if (w.searching && !exit) {
      // We came back as a searcher; searching stops in found_work() or the next park().
      return false;
    }
    return exit;
  }

  /// Isolated waits (executor_core.hpp, wait_isolated()): a thread inside an isolation region
  /// that found no task of its region anywhere sleeps until its wait is over or until a task
  /// may have become reachable: a task queued on a deque, or a batch moved between deques.
  /// (I1) the waiter sets its flag, counts itself in isolated_waiters_ (seq_cst RMW), runs a
  /// seq_cst fence and looks once more at every deque before it sleeps on its parker. (I2) a
  /// thread that made tasks reachable runs a seq_cst fence, then calls wake_isolated(): either
  /// its load sees the waiter's count (and unparks it: the waiter looks again), or the waiter's
  /// second look sees the tasks. The (N1) sites of submit(), push_announced() and the batch
  /// moves share their fence with (I2); join's push_local() does not announce, as for (N1):
  /// its owner pops the job back itself.
  void wake_isolated(worker_ctx const* except = nullptr) noexcept {
    // acquire: pairs with the seq_cst RMW (I1) in enter_isolated_sleep(): the waiter's flag,
    // stored before it, is visible below. The caller's fence orders this load after its
    // pushes (I2).
    if (isolated_waiters_.value.load(std::memory_order_acquire) == 0) [[likely]] {
      return;
    }
    for (std::size_t i = 0; i < ctxs_.size(); ++i) {
      // relaxed: published by the acquire load above; a flag lowered meanwhile costs one
      // spurious unpark, which every park of a worker's parker tolerates (it re-checks).
      if (isolated_asleep_[i].value.load(std::memory_order_relaxed) && ctxs_[i].get() != except) {
        parker_of(*ctxs_[i]).unpark();
      }
    }
  }

  /// (I1), the waiter's half: announced as a waiter, ready for its last look.
  void enter_isolated_sleep(worker_ctx& w) noexcept {
    // relaxed: published by the seq_cst RMW below (a release).
    isolated_asleep_[w.index].value.store(true, std::memory_order_relaxed);
    // seq_cst: (I1); pairs with the acquire load in wake_isolated() after its (I2) fence.
    isolated_waiters_.value.fetch_add(1, std::memory_order_seq_cst);
    // (I1) fence: our count is visible before our last look at the deques; pairs with the
    // (I2) fence of a thread that queued or moved tasks.
    fence_seq_cst();
  }

  /// The waiter is awake again (or did not sleep).
  void leave_isolated_sleep(worker_ctx& w) noexcept {
    // seq_cst: as (I1); a waker that still sees the count unparks us spuriously, harmless.
    isolated_waiters_.value.fetch_sub(1, std::memory_order_seq_cst);
    // relaxed: only a hint for wake_isolated(), which tolerates a stale value either way.
    isolated_asleep_[w.index].value.store(false, std::memory_order_relaxed);
  }

  /// Called by an idle top-level worker after (P1) found no work. Declares termination when
  /// shutdown has begun and nothing can produce work any more.
  auto try_terminate() noexcept -> bool {
    // seq_cst: pairs with the store in shutdown(), which follows the injector's close: every
    // accepted outside push is then visible to work_visible() below.
    if (!stopping_.load(std::memory_order_seq_cst)) {
      return false;
    }
    // seq_cst: every worker is at top level (none is running a task, so none can spawn).
    if (idle_top_.value.load(std::memory_order_seq_cst) !=
        started_.load(std::memory_order_seq_cst)) {
      return false;
    }
    // seq_cst: (G1)/(G2) in enter_guest()/release_guest(): no guest is running a root task
    // (it could still push a join's job, or submit, into its deque).
    if (guests_.value.load(std::memory_order_seq_cst) != 0) {
      return false;
    }
    // seq_cst: pairs with the RMWs on coroutines_ in executor_core (bind/unbind). A bound
    // coroutine, suspended or not, may still produce work; it is lowered only by the coroutine
    // itself, running on a worker that is then not idle.
    if (coroutines_.value.load(std::memory_order_seq_cst) != 0) {
      return false;
    }
    if (work_visible()) {
      return false;
    }
    // release: pairs with the acquire loads in next_task() and park().
    terminated_.store(true, std::memory_order_release);
    idle_.wake_all();
    return true;
  }

  idle_set idle_;
  std::size_t workers_;
  injector injector_;
  // The bound on tasks queued from outside (executor_options::injector_capacity); 0: none.
  // Set before any thread starts.
  std::size_t injector_capacity_ = 0;
  // executor_options::private_joins: whether push_local may keep a job private. Set before
  // any thread starts.
  bool private_joins_ = false;
  // executor_options::trace: the tracer and its context, or nullptr. Set before any thread
  // starts.
  trace_fn tracer_ = nullptr;
  void* trace_context_ = nullptr;
  // Bounded injector only: submissions in the injector (places taken; coroutine resumptions
  // there take none), outside submitters asleep
  // on a full injector, and the futex word they sleep on (bumped whenever a worker that gives
  // places back sees a waiter, and at shutdown). See (R1)/(R2).
  cache_padded<atomic<std::size_t>> queued_outside_{};
  cache_padded<atomic<std::uint32_t>> room_waiters_{};
  cache_padded<atomic<std::uint32_t>> room_epoch_{};
  std::vector<std::unique_ptr<worker_ctx>> ctxs_;
  std::vector<spindle::stealer<task*>> stealers_;

  // INVARIANT: the number of worker threads that run (all of them unless a start failed).
  atomic<std::size_t> started_{0};
  atomic<bool> stopping_{false};
  atomic<bool> terminated_{false};
  cache_padded<atomic<std::size_t>> idle_top_{};
  // INVARIANT: the number of claimed guest slots whose owner has not left.
  cache_padded<atomic<std::size_t>> guests_{};
  // INVARIANT: the number of live coroutines bound to this executor.
  cache_padded<atomic<std::size_t>> coroutines_{};
  // Isolated waits, (I1)/(I2) at wake_isolated(): threads inside an isolation region that are
  // about to sleep or asleep, and for each context whether its thread is one of them.
  // INVARIANT: isolated_waiters_ counts the raised flags (between the two RMWs of a waiter).
  cache_padded<atomic<std::size_t>> isolated_waiters_{};
  std::unique_ptr<cache_padded<atomic<bool>>[]> isolated_asleep_;
  // The next-slot watch (next_slot.hpp), owned by executor_core: null until the first
  // coroutine binds, then published with a release store; loaded by an owner that armed it.
  atomic<next_slot_watch*> next_watch_{nullptr};
  // Whether the watch looks (next_slot.hpp, (S2)): read by every put, written by the watch
  // when it rests and by the owner that arms it again. Armed from the start, and for ever where
  // no watch runs (under the model checker), so that a put then never tries to wake one.
  cache_padded<next_slot_arming> next_arming_{};
  // Set (before the first coroutine binds) when the watch could not start: resumptions then go
  // to the deque, where thieves see them, instead of an unwatched slot.
  atomic<bool> next_unwatched_{false};
  // What the watch saw at its last look at each worker's slot; its thread's alone.
  struct next_seen {
    task* t = nullptr;
    std::uint64_t runs = 0;
  };
  std::unique_ptr<next_seen[]> next_seen_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
