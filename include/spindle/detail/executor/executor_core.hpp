#pragma once
// The executor's engine: worker threads, their deques, the injector, finding work, parking,
// helping while waiting, and shutdown. The public face is spindle/executor.hpp.
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
// Shutdown: `shutdown()` closes the injector, under its push lock, so an outside submission either
// got in before (and is in the queue) or fails; then it sets `stopping_`. Workers keep running
// tasks, including tasks those tasks spawn. A worker that finds nothing and sees every worker
// idle at top level (not inside a task) and every queue empty declares `terminated_`, and all
// workers exit. No accepted task is dropped: each sits in a queue or is running, and either
// keeps some worker out of the idle state.
//
// Guests: a thread that is not a worker and calls join, parallel_for or parallel_reduce
// (detail::run_as_root) borrows one of `guest_slots` extra contexts, each with a deque that the
// workers steal from, and runs the root task itself as a worker would, instead of injecting it
// and sleeping until a parked worker wakes (a futex wake costs 50-200 us on the 2-core VM the
// benchmarks ran on, against a 1 ms parallel_for). oneTBB's task_arena::execute makes the
// caller occupy an arena slot the same way. A guest:
// - pushes its join jobs, and tasks it spawns, onto its own deque (with (N1) for spawns, as a
//   worker does), takes one task at a time when it steals (never a batch, so its deque holds
//   only what it pushed), never takes from the injector, and is not counted by the idle set;
//   while waiting it helps, spins briefly, then sleeps on the slot's parker.
// - blocks termination while it is in its slot: (G1) it counts itself in `guests_` (seq_cst)
//   before reading `stopping_`, and backs out to the injector path if shutdown began;
//   try_terminate() reads `guests_` after `stopping_`. (G2) on leaving it uncounts itself, then
//   reads `stopping_` and, if set, wakes the idle workers so the last one re-runs the
//   termination check. A task a guest spawned and did not join stays in the slot's deque,
//   which work_visible() and steal() cover like any worker's deque.
//
// Allocation (profiled with perf record on a Release build: one outside thread posting
// 1,000,000 empty tasks to 2 workers). Before: malloc and free were a fifth to a third of
// the samples (it varied with the load on the machine), the workers' hottest instructions were the
// injector's pointer walk (a cache miss per task while holding the lock), and the producer waited
// for that lock. Chosen: the injector stores task pointers in recycled blocks
// (detail/executor/injector.hpp), and task records of up to pool_payload bytes come from per-thread
// pools whose nodes other threads return with one CAS (detail/executor/task_pool.hpp; a thread that
// exits with nodes outstanding leaves its heap to the last of them). After: the injector walk is
// gone from the profile; malloc and free remain for the records beyond a pool's limit in a burst (a
// 1,000,000-task burst runs far past it) and for deque growth.
// Second round (perf annotate, same workload): the producer's hottest instructions were the
// injector lock's compare-exchange and unlocking exchange (the workers' polls of the queue's
// length sat on the lock's line) and the load of a recycled node's `next` (the node was last
// written by the worker that freed it); the workers' were the CAS of each node's return to the
// producer's pool. Now the injector has a lock per end on lines of their own
// (detail/executor/injector.hpp) and a worker returns nodes in batches of 32 with one CAS
// (detail/executor/task_pool.hpp): in `spindle-bench executor` runs on a quiet machine, posting
// went from 2.0 to 5.2 M tasks/s, task_group::spawn from 2.4 to 3.9, spawn+join from 1.6-2.0
// to 3.3-3.4. The load of a recycled node's `next` is still the producer's hottest instruction.
//
// Model checking (tests/model/executor_test.cpp): the workers start as `detail::os_thread`, a
// model thread under SPINDLE_MODEL_CHECK, so the scheduler interleaves every step of the
// protocols above. Nothing here may depend on state that outlives one model execution: the
// victim rotation is seeded from the worker index, `current_worker` is reset when a worker
// exits, and outside waiters sleep on a parker of this core under the model (see
// outside_parker()).
//
// Synchronization:
//   stopping_    set once by shutdown() (seq_cst) after closing the injector; read by idle
//                workers. Once a worker sees it, no outside push can follow (the injector's
//                push lock orders every successful push before the close).
//   idle_top_    workers at top level between their decision to park and their wake.
//   terminated_  set once by the last idle worker; read by workers.
//   started_     worker threads running; set before they start (or lowered before shutdown
//                when a thread failed to start).
//   worker_ctx::counters  written by the owner (relaxed), read by stats() (relaxed).
//   guests_      guests in their slots; seq_cst RMWs (G1)/(G2), read by try_terminate().
//   worker_ctx::claimed  a guest slot's owner flag: acquire CAS to take it, release store to
//                give it back (hands the slot's deque and parker from one guest to the next).

#include <spindle/deque.hpp>
#include <spindle/detail/executor/completion.hpp>
#include <spindle/detail/executor/idle_set.hpp>
#include <spindle/detail/executor/injector.hpp>
#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/backoff.hpp>
#include <spindle/detail/sync/cache_padded.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/executor_stats.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace spindle::detail {

class executor_core;

/// Where an exception that nobody observed comes from, for the handler's default message.
enum class report_origin : std::uint8_t {
  posted_task,         ///< escaped a task passed to executor::post
  unwaited_task_group  ///< a task of a task_group destroyed without wait()
};

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
/// "Guests" in the file comment).
inline constexpr std::size_t guest_slots = 2;

struct worker_counters {
  atomic<std::uint64_t> tasks_run{0};
  atomic<std::uint64_t> tasks_stolen{0};
  atomic<std::uint64_t> steal_attempts{0};
  atomic<std::uint64_t> times_parked{0};

  // relaxed: a statistic written only by the owning worker.
  static void bump(atomic<std::uint64_t>& c) noexcept {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
};

/// What a worker thread owns, or what a guest borrows while it takes part in its own root task.
struct worker_ctx {
  worker_ctx(executor_core* c, std::size_t i, bool is_guest)
      : core(c), index(i), rng(0x9e3779b9U * (i + 1)), guest(is_guest) {}

  executor_core* core;
  std::size_t index;
  spindle::deque_owner<task*> deque{deque_order::lifo};
  std::uint32_t tick = 0;
  std::uint32_t rng;
  bool searching = false;
  bool force_search = false;
  bool guest;
  // Guests only: the calling thread's current_worker before it entered the slot.
  worker_ctx* previous = nullptr;
  cache_padded<worker_counters> counters;
  // Guests only. INVARIANT: true while an outside thread owns the slot; the owner alone uses
  // the deque's owner side and guest_parker (workers sleep on the idle set's parkers).
  atomic<bool> claimed{false};
  parker guest_parker;
};

/// The worker the calling thread is, or nullptr outside any executor's workers.
inline thread_local worker_ctx* current_worker = nullptr;

class executor_core {
 public:
  using exception_handler = std::function<void(std::exception_ptr)>;

  /// Throws: std::invalid_argument if workers == 0; std::system_error if a thread cannot start.
  executor_core(std::size_t workers, exception_handler on_unhandled)
      : idle_(check_count(workers)), workers_(workers), handler_(std::move(on_unhandled)) {
    ctxs_.reserve(workers + guest_slots);
    stealers_.reserve(workers + guest_slots);
    for (std::size_t i = 0; i < workers + guest_slots; ++i) {
      ctxs_.push_back(std::make_unique<worker_ctx>(this, i, i >= workers));
      stealers_.push_back(ctxs_.back()->deque.stealer());
    }
    threads_.reserve(workers);
    // relaxed: no worker runs yet; the thread start publishes it.
    started_.store(workers, std::memory_order_relaxed);
    try {
      for (std::size_t i = 0; i < workers; ++i) {
        // reserve() above: push_back cannot throw, so a started thread is always owned.
        threads_.push_back(std::make_unique<os_thread>([this, i] { worker_main(*ctxs_[i]); }));
      }
    } catch (...) {
      // Only the threads that started take part in the quiescence check.
      // seq_cst: read by try_terminate() after it sees stopping_, which shutdown() sets next.
      started_.store(threads_.size(), std::memory_order_seq_cst);
      shutdown();
      throw;
    }
  }

  executor_core(executor_core const&) = delete;
  auto operator=(executor_core const&) -> executor_core& = delete;

  ~executor_core() {
    // A guest too: the workers cannot terminate while it holds its slot.
    if (local() != nullptr) {
      std::fputs("spindle: executor destroyed from one of its own workers or guests\n", stderr);
      std::terminate();
    }
    shutdown();
  }

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
  [[nodiscard]] auto parker_of(worker_ctx& w) noexcept -> parker& {
    return w.guest ? w.guest_parker : idle_.parker_of(w.index);
  }

  /// Lends a guest slot to the calling thread, which is neither a worker nor a guest of this
  /// executor, so that it runs the root of the work it is about to wait for (run_as_root) as
  /// if it were a worker. Returns nullptr when every slot is taken or shutdown has begun; the
  /// caller then submits its root to the injector and sleeps. On success the caller must call
  /// leave_guest() on the same thread.
  [[nodiscard]] auto enter_guest() noexcept -> worker_ctx* {
    for (std::size_t i = workers_; i < ctxs_.size(); ++i) {
      worker_ctx& g = *ctxs_[i];
      bool expected = false;
      // acquire: pairs with the release store in leave_guest(): the previous guest's use of the
      // deque's owner side and of guest_parker happens-before ours.
      if (!g.claimed.compare_exchange_strong(expected, true, std::memory_order_acquire,
                                             std::memory_order_relaxed)) {
        continue;
      }
      // (G1) seq_cst: announce the guest before reading stopping_; pairs with the loads of
      // stopping_ and guests_ in try_terminate(): either that worker sees the guest and does
      // not terminate, or we see stopping_ and back out.
      guests_.value.fetch_add(1, std::memory_order_seq_cst);
      // seq_cst: see (G1).
      if (stopping_.load(std::memory_order_seq_cst)) {
        release_guest(g);
        return nullptr;
      }
      g.previous = current_worker;
      current_worker = &g;
      return &g;
    }
    return nullptr;
  }

  /// Wakes up to `n` sleeping workers at once, each counted as searching, for a guest that is
  /// about to split work at least that wide (an outside parallel_for or parallel_reduce).
  /// Left to the pushes, they would wake one at a time: the guest's first push wakes one
  /// worker, and only once that one finds work does it wake the next (the ramp-up of
  /// idle_set.hpp), so on the 2-core VM, where a parked thread runs again 50-190 us after its
  /// wake, the second helper joined a 1 ms loop late. Three same-process A/B runs of
  /// `spindle-bench executor --only for` (medians of 21): 0.813, 0.846, 0.817 ms waking the
  /// workers at entry against 0.857, 0.866, 0.830 without (oneTBB 0.843, 0.855, 0.850). A woken
  /// worker that finds nothing searches, lingers and parks again, as after any wake.
  void wake_for_guest(std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
      if (!idle_.wake_one()) {
        return;
      }
    }
  }

  /// Gives back the slot enter_guest() lent. The guest's joins are all complete; tasks it
  /// submitted and did not join stay in its deque, where workers steal them (they were
  /// announced by (N1) when pushed, and work_visible() looks at guest deques).
  void leave_guest(worker_ctx& g) noexcept {
    current_worker = g.previous;
    g.previous = nullptr;
    release_guest(g);
  }

  /// Queues `t`. On a worker (or guest) of this executor: its own deque. Elsewhere: the
  /// injector.
  /// Throws: std::logic_error after shutdown (t is untouched); std::bad_alloc.
  void submit(task* t) {
    if (worker_ctx* const w = local()) {
      w->deque.push(t);
      // (N1): a task that outlives its spawner's attention (the spawner may block on
      // something else) must not sit in a deque while every other worker sleeps; pairs with
      // the fence after (P1) in park(). Only join skips this, see push_local().
      fence_seq_cst();
      if (idle_.should_wake()) {
        idle_.wake_one();
      }
    } else {
      submit_outside(t);
    }
  }

  /// join's push: onto the calling worker's own deque, waking a sleeper if nobody searches.
  void push_local(worker_ctx& w, task* t) {
    w.deque.push(t);
    // No (N1) fence here: join's owner pops the job back itself unless a thief took it, so a
    // missed wake costs parallelism, never progress (rayon makes the same trade for its
    // local jobs). A fence per fork would cost about as much as the rest of the fork.
    if (idle_.should_wake()) [[unlikely]] {
      idle_.wake_one();
    }
  }

  /// Waits until `done` is set. A worker of this executor runs other tasks meanwhile; any
  /// other thread sleeps.
  void wait(completion& done) noexcept {
    if (worker_ctx* const w = local()) {
      if (w->guest) {
        wait_as_guest(*w, done);
        return;
      }
      while (task* t = next_task(*w, &done)) {
        run(*w, t);
      }
    } else {
      done.wait_outside(outside_parker());
    }
  }

  /// The parker the calling thread, which is not one of this executor's workers, sleeps on
  /// while it waits for one of this executor's tasks. It outlives every set() that may unpark
  /// it: the setters are this executor's tasks.
  [[nodiscard]] auto outside_parker() noexcept -> parker& {
#if defined(SPINDLE_MODEL_CHECK)
    // The model checker reuses OS threads across executions, so a thread_local parker would
    // carry a stale token (and stale clocks) from one execution into the next and a schedule
    // would not replay alone. One parker per model thread, owned by this core (which lives
    // within one execution), plays the thread_local's part.
    int const id = ::spindle::model::impl::current_thread;
    SPINDLE_ASSERT(id >= 0 && static_cast<std::size_t>(id) < ::spindle::model::max_threads,
                   "an executor waited on outside a model execution");
    return model_outside_[static_cast<std::size_t>(id)];
#else
    return detail::outside_parker();
#endif
  }

  /// Runs a task popped by the calling worker.
  void run(worker_ctx& w, task* t) noexcept {
    worker_counters::bump(w.counters.value.tasks_run);
    t->run(t);
  }

  /// Reports an exception that escaped a posted task, or one of the other `origin`s.
  void report(std::exception_ptr e, report_origin origin = report_origin::posted_task) noexcept {
    exception_handler h;
    {
      std::lock_guard guard(handler_mu_);
      h = handler_;
    }
    if (h) {
      try {
        h(std::move(e));
        return;
      } catch (...) {
        std::fputs("spindle: the unhandled-exception handler threw\n", stderr);
        std::terminate();
      }
    }
    std::fputs(origin == report_origin::posted_task
                   ? "spindle: an exception escaped a task passed to executor::post\n"
                   : "spindle: an exception escaped a task of a spindle::task_group destroyed "
                     "without wait()\n",
               stderr);
    std::terminate();
  }

  static void report_thunk(void* core, std::exception_ptr e) noexcept {
    static_cast<executor_core*>(core)->report(std::move(e));
  }

  void set_handler(exception_handler h) {
    std::lock_guard guard(handler_mu_);
    handler_ = std::move(h);
  }

  /// Finishes every accepted task, then joins the workers. Idempotent; concurrent callers all
  /// return after the workers have exited.
  /// Throws: std::logic_error when called from one of this executor's workers or guests.
  void shutdown() {
    // A guest too: the workers cannot terminate while it holds its slot.
    if (local() != nullptr) {
      throw std::logic_error(
          "spindle::executor::shutdown called from one of its own workers or inside a join of "
          "its own");
    }
    std::lock_guard guard(shutdown_mu_);
    injector_.close();
    // seq_cst: read by try_terminate(); the close above happens-before it, so a worker that
    // sees stopping_ sees every push the injector accepted.
    stopping_.store(true, std::memory_order_seq_cst);
    // Sleepers re-evaluate: the last one to park again sees stopping_ and quiescence.
    idle_.wake_all();
    for (auto& t : threads_) {
      t->join();
    }
    // A later (idempotent) call finds nothing to join.
    threads_.clear();
  }

  [[nodiscard]] auto stats() const -> std::vector<worker_stats> {
    std::vector<worker_stats> out;
    out.reserve(workers_);
    for (std::size_t i = 0; i < workers_; ++i) {
      auto const& c = ctxs_[i]->counters.value;
      worker_stats s;
      // relaxed (all four): statistics written by their owner only; see worker_counters.
      s.tasks_run = c.tasks_run.load(std::memory_order_relaxed);
      // relaxed: as above.
      s.tasks_stolen = c.tasks_stolen.load(std::memory_order_relaxed);
      // relaxed: as above.
      s.steal_attempts = c.steal_attempts.load(std::memory_order_relaxed);
      // relaxed: as above.
      s.times_parked = c.times_parked.load(std::memory_order_relaxed);
      out.push_back(s);
    }
    return out;
  }

 private:
  static auto check_count(std::size_t workers) -> std::size_t {
    if (workers == 0) {
      throw std::invalid_argument("spindle::executor needs at least one worker");
    }
    return workers;
  }

  void submit_outside(task* t) {
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

  void worker_main(worker_ctx& w) {
    current_worker = &w;
    while (task* t = next_task(w, nullptr)) {
      run(w, t);
    }
    current_worker = nullptr;
  }

  auto next_random(worker_ctx& w) noexcept -> std::uint32_t {
    // xorshift32: victim rotation only.
    w.rng ^= w.rng << 13U;
    w.rng ^= w.rng >> 17U;
    w.rng ^= w.rng << 5U;
    return w.rng;
  }

  void release_guest(worker_ctx& g) noexcept {
    // seq_cst: (G2) the guest is gone before we read stopping_; pairs with try_terminate()'s
    // load of guests_: a worker that saw this guest and parked is in the sleeper list by
    // then (it registered before its check), so the wake_all() below reaches it.
    guests_.value.fetch_sub(1, std::memory_order_seq_cst);
    // release: pairs with the acquire CAS in enter_guest().
    g.claimed.store(false, std::memory_order_release);
    // seq_cst: see (G2).
    if (stopping_.load(std::memory_order_seq_cst)) {
      // Idle workers that could not terminate while we were here re-evaluate.
      idle_.wake_all();
    }
  }

  /// A batch from the injector: returns the first task and pushes the others into w's deque,
  /// then announces them (announce_moved()) if any are left there.
  auto from_injector(worker_ctx& w) noexcept -> task* {
    bool moved = false;
    task* const first =
        injector_.pop_batch(workers_, injector_batch, [&w, &moved](task* t) noexcept {
          // The deque grows by allocation; if that fails, run the task here instead of losing
          // it.
          try {
            w.deque.push(t);
            moved = true;
          } catch (...) {
            t->run(t);
          }
        });
    if (moved) {
      announce_moved(w);
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
        if (r.is_success()) {
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
    }
    return t;
  }

  /// A guest's search: its own deque, then one task from each victim in turn. A guest takes
  /// no batch (its deque holds only what it pushed itself, so nothing is left there unannounced
  /// when it leaves), never looks at the injector (an outside caller does not pick up unrelated
  /// submissions) and is not counted by the idle set (notifiers never rely on it).
  auto find_task_as_guest(worker_ctx& g) noexcept -> task* {
    if (auto t = g.deque.pop()) {
      return *t;
    }
    return steal_rounds(g, [](spindle::stealer<task*>& victim) { return victim.steal(); });
  }

  /// A guest's wait for `until`: help while anything is runnable, spin a little, yield up to
  /// linger_yields times, then sleep on the slot's parker until the completion is set.
  ///
  /// The yields are for the end of an outside parallel_for or join: the guest has run its own
  /// part and waits for the half a worker stole, which is usually a leaf away from done. A
  /// guest that parked there would be woken at once, and on the 2-core VM a wake reaches a
  /// thread whose core went idle about 50-190 us later (`perf sched`), which is a tenth of a
  /// 1 ms loop. Three same-process A/B runs of `spindle-bench executor --only for` (medians of
  /// 21): 0.827, 0.843, 0.807 ms with the yields against 0.898, 0.898, 0.843 without (oneTBB
  /// 0.970, 0.986, 0.951).
  void wait_as_guest(worker_ctx& g, completion& until) noexcept {
    backoff spin;
    std::uint32_t lingered = 0;
    while (!until.is_set()) {
      if (task* t = find_task_as_guest(g)) {
        run(g, t);
        spin.reset();
        continue;
      }
      if (!spin.is_completed()) {
        spin.snooze();
        continue;
      }
      if (lingered < linger_yields) {
        ++lingered;
        thread_yield();
        continue;
      }
      until.wait_outside(g.guest_parker);
      return;
    }
  }

  /// One pass over every place a task can be.
  auto find_task(worker_ctx& w) noexcept -> task* {
    if (++w.tick % injector_interval == 0) {
      if (task* t = from_injector(w)) {
        return t;
      }
    }
    if (auto t = w.deque.pop()) {
      return *t;
    }
    if (task* t = from_injector(w)) {
      return t;
    }
    if (!w.searching) {
      if (w.force_search) {
        w.force_search = false;
        w.searching = idle_.force_begin_search();
      } else {
        w.searching = idle_.try_begin_search();
      }
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
      w.force_search = work;
      w.searching = idle_.cancel_park(w.index);
    } else if (top && try_terminate()) {
      w.searching = idle_.cancel_park(w.index);
      exit = true;
    } else {
      worker_counters::bump(w.counters.value.times_parked);
      idle_.park(w.index);
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
  std::vector<std::unique_ptr<worker_ctx>> ctxs_;
  std::vector<spindle::stealer<task*>> stealers_;
  std::vector<std::unique_ptr<os_thread>> threads_;
#if defined(SPINDLE_MODEL_CHECK)
  parker model_outside_[::spindle::model::max_threads];
#endif

  // INVARIANT: the number of worker threads that run (all of them unless a start failed).
  atomic<std::size_t> started_{0};
  atomic<bool> stopping_{false};
  atomic<bool> terminated_{false};
  cache_padded<atomic<std::size_t>> idle_top_{};
  // INVARIANT: the number of claimed guest slots whose owner has not left.
  cache_padded<atomic<std::size_t>> guests_{};

  mutex handler_mu_;
  exception_handler handler_;
  mutex shutdown_mu_;
};

}  // namespace spindle::detail
