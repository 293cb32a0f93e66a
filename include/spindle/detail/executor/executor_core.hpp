// SPDX-License-Identifier: BSL-1.0
#pragma once
// The executor's engine: the worker threads, the guest slots, waiting, error reporting and
// shutdown, on top of the scheduler (detail/executor/scheduler.hpp: the queues, finding and
// stealing work, parking and termination). The public face is spindle/executor.hpp.
//
// Waiting is help-first (see scheduler.hpp): a worker that waits runs other tasks meanwhile.
//
// Shutdown: `shutdown()` closes the injector, under its push lock, so an outside submission
// either got in before (and is in the queue) or fails; then it sets `stopping_`, and the workers
// finish every accepted task before they terminate (see "Termination" in scheduler.hpp).
//
// Guests: a thread that is not a worker and calls join, parallel_for or parallel_reduce
// (detail::run_as_root) borrows one of `guest_slots` extra contexts, each with a deque that the
// workers steal from, and runs the root task itself as a worker would, instead of injecting it
// and sleeping until a parked worker wakes (a parked thread runs again only a while after its
// wake, a large part of a short parallel_for; measurements: docs/performance.md, Executor).
// oneTBB's task_arena::execute makes the caller occupy an arena slot the same way. A guest:
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
// Allocation: at most one record per task, usually a recycled one: the injector stores task
// pointers in recycled blocks (detail/executor/injector.hpp) and task records of up to pool_payload
// bytes come from per-thread pools (detail/executor/task_pool.hpp), because malloc, free and a
// pointer walk per task dominated the profile of one thread posting to the workers
// (measurements: docs/performance.md, Executor).
//
// Model checking (tests/model/executor_test.cpp): the workers start as `detail::os_thread`, a
// model thread under SPINDLE_MODEL_CHECK, so the model checker interleaves every step of the
// protocols above. Nothing here may depend on state that outlives one model execution: the
// victim rotation is seeded from the worker index, `current_worker` is reset when a worker
// exits, and outside waiters sleep on a parker of this core under the model (see
// outside_parker()).
//
// Helping depth: a waiting worker that runs other tasks nests them on its own stack, and a
// task run there may wait and help again. rayon bounds nothing here (rayon issues #854 and
// #1064: stack overflows from nested stealing while waiting); oneTBB stops stealing once the
// stack is about half used (its stealing threshold). spindle does the same: past the middle
// of the stack the worker had below its first frame (help_floor, read when the worker starts;
// see detail/sync/native_thread.hpp), a waiting worker runs only tasks from its own deque,
// which the code on its stack pushed, and otherwise sleeps until its wait is over
// (wait_restricted). The nesting of unrelated tasks is then bounded by half the stack,
// whatever size executor_options::stack_size gives it; the other half is left for the deepest
// task's own frames. Tests: tests/executor_options_test.cpp (DeepWaiterDoesNotHelp,
// DeepJoinOnSmallStacks).
//
// Isolation (spindle/isolate.hpp): a thread inside an isolation region runs only tasks of the
// region while it waits, from its own deque and stolen from the others (wait_isolated()), so a
// lock held across a join is never re-entered by an unrelated task on the same thread.
//
// Nested executors: a worker of one executor that joins or runs a parallel loop on another
// enters it as a guest, and waits for a slot when both are taken (enter_guest_waiting()),
// since the other executor's workers may be waiting for it.
//
// Synchronization: the scheduler's fields are listed in scheduler.hpp, a worker's in
// worker_ctx.hpp. Here:
//   guests_      raised by enter_guest() (G1) and lowered by release_guest() (G2), seq_cst.
//   worker_ctx::claimed  taken by enter_guest() (acquire CAS), given back by release_guest()
//                (release store).
//   handler_     guarded by handler_mu_. threads_ and watchdog_ by shutdown_mu_ once the
//                constructor returned.
//
// Diagnostics: snapshot() reads what every thread publishes (worker_ctx::diag, the counters,
// the deques' sizes, the injector's) with relaxed loads, from any thread, for spindle::dump().
// The optional watchdog (executor_options::stall_report, detail/executor/stall_watchdog.hpp) is
// one thread of the core's own that takes such a snapshot when no task has started for a while
// and work is pending; it stops in shutdown(), after the workers. Every core is listed in
// detail::registry() (diag.hpp) from the end of its constructor to the start of its destructor, for
// spindle::dump_all().

#include <spindle/detail/coro/coro_registry.hpp>
#include <spindle/detail/coro/resume.hpp>
#include <spindle/detail/executor/blocking_pool.hpp>
#include <spindle/detail/executor/completion.hpp>
#include <spindle/detail/executor/diag.hpp>
#include <spindle/detail/executor/next_slot.hpp>
#include <spindle/detail/executor/scheduler.hpp>
#include <spindle/detail/executor/stall_watchdog.hpp>
#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/executor/worker_ctx.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/backoff.hpp>
#include <spindle/detail/sync/blocking_hook.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/detail/sync/native_thread.hpp>
#include <spindle/detail/sync/parker.hpp>
#include <spindle/detail/sync/wait_note.hpp>
#include <spindle/diagnostics.hpp>
#include <spindle/executor_options.hpp>
#include <spindle/executor_stats.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// Where an exception that nobody observed comes from, for the handler's default message.
enum class report_origin : std::uint8_t {
  posted_task,          ///< escaped a task passed to executor::post
  unwaited_task_group,  ///< a task of a task_group destroyed without wait()
  thread_hook,          ///< escaped executor_options::on_thread_start or on_thread_stop
  stall_sink            ///< escaped the sink of executor_options::stall_report
};

class executor_core final : public scheduler,
                            public resume_target,
                            private stall_probe,
                            private next_slot_probe {
 public:
  using exception_handler = std::function<void(std::exception_ptr)>;

  /// Throws: std::invalid_argument if workers == 0; std::system_error if a thread cannot start.
  executor_core(std::size_t workers, exception_handler on_unhandled)
      : executor_core(workers, executor_options().on_unhandled(std::move(on_unhandled))) {}

  /// `workers` threads made as `opts` says (opts.workers is not read: the caller resolved it).
  /// Throws: std::invalid_argument if workers == 0 or a setting cannot be honoured (before
  /// any thread starts); std::system_error if a thread cannot start.
  executor_core(std::size_t workers, executor_options opts)
      : scheduler(workers),
        handler_(opts.on_unhandled()),
        on_thread_start_(opts.on_thread_start()),
        on_thread_stop_(opts.on_thread_stop()),
        blocking_(blocking_options(opts, workers)),
        next_watch_name_(thread_name_for(opts.thread_name(), "next", 0)),
        list_all_coroutines_(opts.list_coroutines()) {
    check_thread_settings(opts.stack_size(), opts.worker_cpus());
    injector_capacity_ = opts.injector_capacity();
    private_joins_ = opts.private_joins();
    tracer_ = opts.trace();
    trace_context_ = opts.trace_context();
    threads_.reserve(workers);
    // relaxed: no worker runs yet; the thread start publishes it.
    started_.store(workers, std::memory_order_relaxed);
    try {
      for (std::size_t i = 0; i < workers; ++i) {
        thread_settings settings{thread_name_for(opts.thread_name(), "", i), opts.stack_size(), {}};
        if (auto const& cpus = opts.worker_cpus(); !cpus.empty()) {
          settings.cpus = cpus[i % cpus.size()];
        }
        // reserve() above: push_back cannot throw, so a started thread is always owned.
        threads_.push_back(std::make_unique<native_thread>(std::move(settings),
                                                           [this, i] { worker_main(*ctxs_[i]); }));
      }
      start_watchdog(opts);
    } catch (...) {
      // Only the threads that started take part in the quiescence check.
      // seq_cst: read by try_terminate() after it sees stopping_, which shutdown() sets next.
      started_.store(threads_.size(), std::memory_order_seq_cst);
      shutdown();
      throw;
    }
#if !defined(SPINDLE_MODEL_CHECK)
    try {
      registry().add(this);
    } catch (...) {
      // No memory to list it: dump_all() will not show this executor; nothing else changes.
      listed_ = false;
    }
#endif
  }

  executor_core(executor_core const&) = delete;
  auto operator=(executor_core const&) -> executor_core& = delete;

  ~executor_core() {
    refuse_own_thread_on_destruction();
#if !defined(SPINDLE_MODEL_CHECK)
    if (listed_) {
      registry().remove(this);
    }
#endif
    shutdown();
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
      // The guest runs its root task: one level deep, as a worker runs a task.
      g.diag.value.restore(worker_diag::pack(1, worker_state::running));
      // A guest blocking in a channel wait publishes its private join jobs first, then lets
      // the executor the thread works for otherwise (if any) do the same with its own.
      g.outer_hook = std::exchange(current_blocking_hook, blocking_hook{&guest_blocking_thunk, &g});
      g.outer_note = std::exchange(current_note_sink, thread_note_sink{&note_thunk, &g});
      return &g;
    }
    return nullptr;
  }

  /// As enter_guest(), for a thread that is a worker or a guest of another executor: when every
  /// slot is taken it sleeps until one is given back, instead of letting its caller queue the
  /// root and sleep until this executor's workers have run it. Those workers may themselves
  /// be waiting for the calling thread: a worker of A whose parallel_for on B runs a body that
  /// calls parallel_for on A again (the nested pools of an application). A root queued on A
  /// would wait for A's only worker, which waits in B for this thread; a guest runs its root
  /// itself, so every slot is given back without help from this executor's workers, and a
  /// thread that waits for a slot gets one. Returns nullptr only when shutdown began. Before
  /// it sleeps, the calling thread publishes what its own executor's thieves cannot see (its
  /// blocking hook, as before any blocking wait).
  [[nodiscard]] auto enter_guest_waiting() noexcept -> worker_ctx* {
    for (;;) {
      // acquire: pairs with the release increment in release_guest(); read before the try,
      // so that a slot given back after it ends the futex wait below.
      std::uint32_t const epoch = slot_epoch_.value.load(std::memory_order_acquire);
      if (worker_ctx* const g = enter_guest()) {
        return g;
      }
      // seq_cst: pairs with the store in shutdown(), which close_slots() follows.
      if (stopping_.load(std::memory_order_seq_cst)) {
        return nullptr;
      }
      if (current_blocking_hook.fn != nullptr) {
        current_blocking_hook.fn(current_blocking_hook.arg);
      }
      // (S1) seq_cst: count ourselves among the waiters, then try again; pairs with (S2) in
      // release_guest(): either that thread sees us and bumps the epoch, or our try finds
      // the slot it gave back.
      slot_waiters_.value.fetch_add(1, std::memory_order_seq_cst);
      worker_ctx* const g = enter_guest();
      // seq_cst: see (S1).
      if (g == nullptr && !stopping_.load(std::memory_order_seq_cst)) {
        futex_wait(slot_epoch_.value, epoch);
      }
      // seq_cst: as (S1).
      slot_waiters_.value.fetch_sub(1, std::memory_order_seq_cst);
      if (g != nullptr) {
        return g;
      }
    }
  }

  /// Wakes up to `n` sleeping workers at once, each counted as searching, for a guest that is
  /// about to split work at least that wide (an outside parallel_for or parallel_reduce).
  /// Left to the pushes, they would wake one at a time: the guest's first push wakes one
  /// worker, and only once that one finds work does it wake the next (the ramp-up of
  /// idle_set.hpp); a parked thread runs again only a while after its wake, so the later
  /// helpers would join a short loop late (measurements: docs/performance.md, Executor). A
  /// woken worker that finds nothing searches, lingers and parks again, as after any wake.
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
    SPINDLE_ASSERT(g.private_count == 0, "a guest left with a join job it did not pop");
    current_blocking_hook = std::exchange(g.outer_hook, blocking_hook{});
    current_note_sink = std::exchange(g.outer_note, thread_note_sink{});
    current_worker = g.previous;
    g.previous = nullptr;
    g.diag.value.restore(worker_diag::pack(0, worker_state::stopped));
    release_guest(g);
  }

  /// Waits until `done` is set. A worker of this executor runs other tasks meanwhile; any
  /// other thread sleeps.
  /// The worker's published state says `waiting` meanwhile (spindle::dump()).
  void wait(completion& done) noexcept {
    // Noted for dumps through the thread's sink: this executor's worker or guest notes it in its
    // own state, a worker of another executor where that executor's dumps see it.
    blocking_note_scope const note({wait_kind::join, &done});
    if (worker_ctx* const w = local()) {
      std::uint32_t const before = w->diag.value.set_state(worker_state::waiting);
      wait_local(w, done);
      w->diag.value.restore(before);
    } else {
      done.wait_outside(outside_parker());
    }
  }

  /// wait() on a worker or guest `w` of this executor.
  void wait_local(worker_ctx* w, completion& done) noexcept {
    // What `done` waits for may be a join job still private to this thread (a task group
    // inside a join's first half waiting for a task the second half releases, say): offered
    // to thieves before this thread may sleep.
    publish_before_waiting(*w);
    if (w->guest && w->outer_hook.fn != nullptr) [[unlikely]] {
      // A worker of another executor, here as a guest: what that executor's worker holds
      // back from its thieves must not sleep with this thread either.
      w->outer_hook.fn(w->outer_hook.arg);
    }
    if (current_isolation != 0) [[unlikely]] {
      wait_isolated(*w, done);
      return;
    }
    if (w->guest) {
      wait_as_guest(*w, done);
      return;
    }
    if (w->help_floor != 0 &&
        reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)) < w->help_floor) [[unlikely]] {
      wait_restricted(*w, done);
      return;
    }
    while (task* t = next_task(*w, &done)) {
      run(*w, t);
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
               : origin == report_origin::thread_hook
                   ? "spindle: an exception escaped an executor thread's start or stop hook\n"
               : origin == report_origin::stall_sink
                   ? "spindle: an exception escaped the sink of executor_options::stall_report\n"
                   : "spindle: an exception escaped a task of a spindle::task_group destroyed "
                     "without wait()\n",
               stderr);
    std::terminate();
  }

  static void report_thunk(void* core, std::exception_ptr e) noexcept {
    static_cast<executor_core*>(core)->report(std::move(e));
  }

  // Coroutines (detail/coro/resume.hpp): this executor as the target of suspended coroutines.
  void bind() noexcept override {
    // seq_cst: see coroutines_ in scheduler.hpp; read by try_terminate(). Raised by a thread
    // that runs for the executor (a worker, or one about to submit to it), so termination is
    // not decided meanwhile.
    coroutines_.value.fetch_add(1, std::memory_order_seq_cst);
    // acquire: pairs with the release store in start_next_watch(); the watch (or the lack of
    // one) is decided before this coroutine can be resumed.
    if (!next_watch_decided_.load(std::memory_order_acquire)) [[unlikely]] {
      start_next_watch();
    }
  }
  void unbind() noexcept override {
    // seq_cst: as in bind(). Lowered by the coroutine itself while it runs on a worker (its
    // end, or a move to another executor), so the worker is not idle yet.
    coroutines_.value.fetch_sub(1, std::memory_order_seq_cst);
  }
  // Lifetime: a waker outside the executor (a thread's send, the timer thread, another
  // executor's worker) queues a resumption and then still touches the executor (the injector's
  // lock, the (N1) wake-up). Once queued, the coroutine may run, end, unbind, and let shutdown
  // finish and the executor's handle go, all before the waker returns. So such a waker holds a
  // reference to the core across the hand-over (taken while the suspended coroutine, still
  // bound, keeps the executor alive), and whoever drops the last reference deletes the core:
  // the executor's handle (after shutdown) or that waker.
  void resume(resume_node& node) noexcept override {
    if (local() != nullptr) {
      push_resumed(&node);
      return;
    }
    ref();
    push_resumed(&node);
    unref();
  }
  void submit(resume_node& node) override {
    if (local() != nullptr) {
      scheduler::submit(&node);
      return;
    }
    ref();
    try {
      scheduler::submit(&node);
    } catch (...) {
      unref();
      throw;
    }
    unref();
  }

  /// The executor's handle lets go: shut down (every accepted task and bound coroutine
  /// finishes), then drop the handle's reference (see "Lifetime" above).
  static void release_handle(executor_core* core) noexcept {
    core->refuse_own_thread_on_destruction();
    core->shutdown();
    core->unref();
  }
  using scheduler::submit;
  // Bounded submission from outside (executor::try_spawn, try_post).
  using scheduler::bounded;
  using scheduler::cancel_room;
  using scheduler::push_outside;
  using scheduler::stopping;
  using scheduler::try_take_room;

  void set_handler(exception_handler h) {
    std::lock_guard guard(handler_mu_);
    handler_ = std::move(h);
  }

  /// Finishes every accepted task, then joins the workers. Idempotent; concurrent callers all
  /// return after the workers have exited.
  /// Throws: std::logic_error when called from one of this executor's workers, guests or
  /// blocking threads, before anything is changed (the executor keeps running).
  void shutdown() {
    if (on_own_thread()) {
      throw std::logic_error(std::string("spindle::executor::shutdown called from ") +
                             own_thread_misuse);
    }
    // Long tasks that look at the shutdown token may end early; the others run as usual.
    stop_on_shutdown_.request_stop();
    std::lock_guard guard(shutdown_mu_);
    injector_.close();
    // seq_cst: read by try_terminate(); the close above happens-before it, so a worker that
    // sees stopping_ sees every push the injector accepted.
    stopping_.store(true, std::memory_order_seq_cst);
    // Outside submitters asleep on a full injector wake, see stopping_ and throw.
    close_room();
    // Threads waiting for a guest slot wake, see stopping_ and take the injector's path.
    // release: pairs with the acquire load in enter_guest_waiting().
    slot_epoch_.value.fetch_add(1, std::memory_order_release);
    futex_wake_all(slot_epoch_.value);
    // Sleepers re-evaluate: the last one to park again sees stopping_ and quiescence.
    idle_.wake_all();
    for (auto& t : threads_) {
      t->join();
    }
    // A later (idempotent) call finds nothing to join.
    threads_.clear();
    // After the workers: a worker's slot may need the next-slot watch until its task ends.
    stop_next_watch();
    // After the workers: a shutdown that hangs is a stall too.
    stop_watchdog();
    // Then the blocking tasks: the workers' tasks may have started some up to their end.
    blocking_.shutdown();
  }

  /// Runs `t` on the blocking pool (executor::spawn_blocking).
  /// Throws: std::logic_error after shutdown began (t untouched); std::system_error if no
  /// thread can start.
  void submit_blocking(task* t) {
    // seq_cst: pairs with the store in shutdown(); the pool refuses under its own lock once
    // shut down, this check refuses earlier, as spawn does.
    if (stopping_.load(std::memory_order_seq_cst) && local() == nullptr) {
      throw std::logic_error("spindle::executor::spawn_blocking after shutdown began");
    }
    blocking_.submit(t);
  }

  /// A snapshot for executor::metrics().
  ///
  /// Times: a worker's parked time includes the sleep in progress (worker_counters, "Sleep
  /// time"), and busy time is uptime - parked, exactly. Each of the three never decreases
  /// from one snapshot to the next, whichever threads take them: the snapshots are taken
  /// under metrics_mu_, uptime is never less than the last one shown, and a worker's parked
  /// time P is clamped to [P0, P0 + (U - U0)], where P0 and U0 are the parked time and uptime
  /// last shown and U is this uptime. P >= P0 keeps parked time from decreasing, and
  /// P <= P0 + (U - U0) gives U - P >= U0 - P0, so busy time does not decrease either. The
  /// clamp is a guard, not an estimate: the word a worker publishes is read in one load, so
  /// the raw figure is off only by the race between this thread's clock read and the
  /// worker's (a sleep that ends, or begins, while we read), which the memory model cannot
  /// order; it would otherwise make a figure step back by that much.
  [[nodiscard]] auto metrics() const -> executor_metrics {
    executor_metrics m;
    m.injector_depth = injector_.approximate_size();
    m.blocking_threads = blocking_.threads();
    m.blocking_idle = blocking_.idle_threads();
    m.blocking_queued = blocking_.queued();
    m.workers.reserve(workers_);
    std::lock_guard guard(metrics_mu_);
    auto const now = std::chrono::steady_clock::now();
    std::chrono::nanoseconds const last_uptime = shown_uptime_;
    m.uptime = std::max(std::chrono::duration_cast<std::chrono::nanoseconds>(now - started_at_),
                        last_uptime);
    std::int64_t const grown = (m.uptime - last_uptime).count();
    for (std::size_t i = 0; i < workers_; ++i) {
      auto& c = ctxs_[i]->counters.value;
      auto const base = counters_of(i);
      worker_metrics w;
      w.tasks_run = base.tasks_run;
      w.tasks_stolen = base.tasks_stolen;
      w.steal_attempts = base.steal_attempts;
      w.times_parked = base.times_parked;
      // relaxed: a statistic written by its owner only; see worker_counters.
      w.times_woken = c.times_woken.load(std::memory_order_relaxed);
      // relaxed: a statistic with one writer (the next-slot watch).
      w.stuck_resumptions = c.stuck_resumptions.load(std::memory_order_relaxed);
      auto const shown = static_cast<std::int64_t>(c.shown_parked_ns);
      std::int64_t const parked = std::clamp(c.parked_at(now), shown, shown + grown);
      c.shown_parked_ns = static_cast<std::uint64_t>(parked);
      w.parked_time = std::chrono::nanoseconds(parked);
      w.busy_time = m.uptime - w.parked_time;
      w.queue_depth = stealers_[i].size();
      m.workers.push_back(w);
    }
    shown_uptime_ = m.uptime;
    return m;
  }

  /// The list a coroutine spawned now joins (coro_registry.hpp): every coroutine when the
  /// options list them all, a named one in any case; null otherwise, and always under the
  /// model checker.
  [[nodiscard]] auto coroutine_list(bool named) noexcept -> coro_registry* {
#if defined(SPINDLE_MODEL_CHECK)
    static_cast<void>(named);
    return nullptr;
#else
    return named || list_all_coroutines_ ? &listed_coroutines_ : nullptr;
#endif
  }

  /// A snapshot for spindle::dump(): every worker, then every held guest slot, then the listed
  /// coroutines and what they wait on. Callable from any thread at any time, also while every
  /// worker is stuck; it waits for nothing but the coroutine list's lock, which a listed
  /// coroutine's spawn and end hold for a few instructions.
  [[nodiscard]] auto snapshot() const -> executor_dump {
    executor_dump d;
    d.id = id_;
    d.worker_count = workers_;
    d.injector_depth = injector_.approximate_size();
    // relaxed: a snapshot; the count's own protocol (try_terminate()) needs nothing from us.
    d.coroutines = coroutines_.value.load(std::memory_order_relaxed);
    // relaxed: as above.
    d.stopping = stopping_.load(std::memory_order_relaxed);
    d.workers.reserve(ctxs_.size());
    for (std::size_t i = 0; i < ctxs_.size(); ++i) {
      worker_ctx const& w = *ctxs_[i];
      // relaxed: a free slot is skipped; a slot taken or given back meanwhile is shown as
      // either, which a snapshot of a running executor may do.
      if (w.guest && !w.claimed.load(std::memory_order_relaxed)) {
        continue;
      }
      d.workers.push_back(dump_of(w, i));
    }
    list_coroutines_into(d);
    return d;
  }

  /// The token that shutdown() requests: tasks that take a std::stop_token get it.
  [[nodiscard]] auto shutdown_token() const noexcept -> std::stop_token {
    return stop_on_shutdown_.get_token();
  }

  /// A snapshot for executor::stats(): the four counters metrics() also reports.
  [[nodiscard]] auto stats() const -> std::vector<worker_stats> {
    std::vector<worker_stats> out;
    out.reserve(workers_);
    for (std::size_t i = 0; i < workers_; ++i) {
      out.push_back(counters_of(i));
    }
    return out;
  }

 private:
  /// One context as snapshot() shows it.
  [[nodiscard]] auto dump_of(worker_ctx const& w, std::size_t i) const -> worker_dump {
    worker_diag const& g = w.diag.value;
    worker_dump out;
    out.index = i;
    out.guest = w.guest;
    // relaxed (every load below): published by their owner for dumps only (diag_state.hpp).
    std::uint32_t const word = g.activity.load(std::memory_order_relaxed);
    std::uint32_t const state = word & worker_diag::state_mask;
    out.state = state <= static_cast<std::uint32_t>(worker_state::waiting_asleep)
                    ? static_cast<worker_state>(state)
                    : worker_state::stopped;
    std::uint32_t const depth = word >> worker_diag::depth_shift;
    out.stack.reserve(depth);
    for (std::uint32_t k = 0; k < depth; ++k) {
      task_frame f;
      if (k < diag_frames) {
        // relaxed: see above.
        char const* const n = g.frames[k].name.load(std::memory_order_relaxed);
        if (n != nullptr) {
          f.name = n;
          // relaxed (both): see above.
          f.id = g.frames[k].id.load(std::memory_order_relaxed);
          f.key = note_object(g.frames[k].key.load(std::memory_order_relaxed));
        }
        // relaxed: see above. The wait of the task at this depth, if it waits in a join.
        f.waits_for = unpack_note(g.frames[k].waits.load(std::memory_order_relaxed));
      }
      out.stack.push_back(std::move(f));
    }
    // relaxed: see above.
    out.isolation_region = g.region.load(std::memory_order_relaxed);
    out.deque_depth = stealers_[i].size();
    // relaxed: a statistic written by its owner only; see worker_counters.
    out.tasks_run = w.counters.value.tasks_run.load(std::memory_order_relaxed);
    return out;
  }

  /// The listed coroutines into `d`, then the names of the tasks that joins wait for (among
  /// this executor's; dump_all() looks across executors too), then the count of coroutines and
  /// threads waiting on each object.
  void list_coroutines_into(executor_dump& d) const {
    listed_coroutines_.for_each([&](coro_record const& r) {
      coroutine_dump c;
      if (r.name != nullptr) {
        c.name = r.name;
      }
      c.id = r.id;
      c.key = note_object(r.key);
      // relaxed (both): see coro_registry.hpp.
      bool const started = r.started.load(std::memory_order_relaxed);
      std::uint64_t const note = r.word.load(std::memory_order_relaxed);
      if (!started) {
        c.state = coroutine_state::queued;
      } else if (note != 0) {
        c.state = coroutine_state::suspended;
        c.wait = unpack_note(note);
      } else {
        c.state = coroutine_state::running;
      }
      d.listed_coroutines.push_back(std::move(c));
    });
    name_joins(std::span<executor_dump>(&d, 1));
    count_waiters(d);
  }

  /// Starts the stall watchdog if the options ask for one (executor_options::stall_report).
  void start_watchdog(executor_options const& opts) {
#if defined(SPINDLE_MODEL_CHECK)
    static_cast<void>(opts);
#else
    if (opts.stall_report() <= std::chrono::milliseconds(0)) {
      return;
    }
    stall_sink_ = opts.stall_report_sink();
    stall_probe& probe = *this;  // a private base: converted here, where it is accessible
    watchdog_ = std::make_unique<stall_watchdog>(probe, opts.stall_report(),
                                                 thread_name_for(opts.thread_name(), "watch", 0));
#endif
  }

  /// Stops the watchdog, if any, and joins it. Called with shutdown_mu_ held (or by the
  /// constructor's failure path, before the core is shared).
  void stop_watchdog() noexcept { watchdog_.reset(); }

  /// Starts the next-slot watch (detail/executor/next_slot.hpp) for the first coroutine bound
  /// to the executor; an executor that runs no coroutine never needs it. If its thread cannot
  /// start, resumptions go to the deques instead of the slots (next_unwatched_). Not under the
  /// model checker (next_slot.hpp says why): the slots work as before, unwatched.
  void start_next_watch() noexcept {
    std::lock_guard guard(next_watch_mu_);
    // relaxed: written under next_watch_mu_, which this thread holds.
    if (next_watch_decided_.load(std::memory_order_relaxed)) {
      return;
    }
#if !defined(SPINDLE_MODEL_CHECK)
    if (!next_watch_closed_) {
      try {
        next_slot_probe& probe = *this;  // a private base: converted here, where it is accessible
        next_watch_owner_ =
            std::make_unique<next_slot_watch>(probe, next_arming_.value, next_watch_name_);
        // release: publishes the watch to the workers' acquire load in push_resumed().
        next_watch_.store(next_watch_owner_.get(), std::memory_order_release);
      } catch (...) {
        // relaxed: published by the release store below, and by the coroutine's start.
        next_unwatched_.store(true, std::memory_order_relaxed);
      }
    }
#endif
    // release: pairs with the acquire load in bind().
    next_watch_decided_.store(true, std::memory_order_release);
  }

  /// Stops the next-slot watch, if it runs, and keeps a later bind() from starting one. Called
  /// by shutdown() after the workers have exited.
  void stop_next_watch() noexcept {
    std::lock_guard guard(next_watch_mu_);
    next_watch_closed_ = true;
    if (next_watch_owner_) {
      next_watch_owner_->stop();
    }
  }

  /// One look of the next-slot watch, on its thread.
  auto look_at_slots() noexcept -> bool override { return look_at_next_slots(); }

  /// The tasks started so far, on every worker and guest slot.
  [[nodiscard]] auto stall_tasks_started() const noexcept -> std::uint64_t override {
    std::uint64_t n = 0;
    for (auto const& w : ctxs_) {
      // relaxed: a statistic written by its owner only; see worker_counters.
      n += w->counters.value.tasks_run.load(std::memory_order_relaxed);
    }
    return n;
  }

  /// Whether work is pending: a task queued anywhere, or a thread inside a task.
  [[nodiscard]] auto stall_work_pending() const noexcept -> bool override {
    if (work_visible()) {
      return true;
    }
    for (auto const& w : ctxs_) {
      // relaxed: as in dump_of().
      std::uint32_t const word = w->diag.value.activity.load(std::memory_order_relaxed);
      if ((word >> worker_diag::depth_shift) != 0) {
        return true;
      }
    }
    return false;
  }

  /// The watchdog's report: the dump as text, to the sink or to stderr.
  void stall_report(std::chrono::milliseconds stalled) noexcept override {
    try {
      std::string text = "spindle: no task started for " + std::to_string(stalled.count()) +
                         " ms while work is pending\n" + to_text(snapshot());
      if (stall_sink_) {
        stall_sink_(text);
      } else {
        std::fputs(text.c_str(), stderr);
      }
    } catch (...) {
      report(std::current_exception(), report_origin::stall_sink);
    }
  }

  /// Worker i's task and sleep counters, shared by stats() and metrics().
  [[nodiscard]] auto counters_of(std::size_t i) const noexcept -> worker_stats {
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
    return s;
  }

  /// Why shutdown() and destruction are refused on the executor's own threads: each waits for
  /// every task to finish. A worker, or a guest (whose slot keeps the workers running), would
  /// wait for its own exit; a blocking thread runs a spawn_blocking task, which the blocking
  /// pool's shutdown waits for, so it would wait for the task that called it.
  static constexpr char const* own_thread_misuse =
      "one of its own workers or blocking threads (a spawn_blocking task), or inside a join of "
      "its own: it would wait for itself";

  /// Whether the calling thread is one of this executor's workers, guests or blocking threads.
  [[nodiscard]] auto on_own_thread() const noexcept -> bool {
    return local() != nullptr || blocking_.on_own_thread();
  }

  /// The destructor's (and release_handle's) form of shutdown()'s check: it cannot throw, so it
  /// prints the message and terminates, before anything is changed.
  void refuse_own_thread_on_destruction() const noexcept {
    if (on_own_thread()) {
      std::fputs("spindle: executor destroyed from ", stderr);
      std::fputs(own_thread_misuse, stderr);
      std::fputs("\n", stderr);
      std::terminate();
    }
  }

  /// The blocking pool's settings from the executor's: its threads are "<name>-b-<j>", their
  /// hooks see indices from the worker count upwards, and hook exceptions go to the handler.
  /// Runs before any other use of the options (the pool is a member, built before the
  /// constructor's body), so it checks the stack size itself: an error then names the
  /// executor's option, not the pool's.
  auto blocking_options(executor_options const& opts, std::size_t workers)
      -> blocking_pool_options {
    if (opts.max_blocking_threads() == 0) {
      throw std::invalid_argument("spindle::executor_options::max_blocking_threads is 0");
    }
    check_stack_size(opts.stack_size(), "spindle::executor_options::stack_size");
    blocking_pool_options b;
    b.max_threads = opts.max_blocking_threads();
    b.keep_alive = opts.blocking_keep_alive();
    b.stack_size = opts.stack_size();
    // The tag is kept whole when a long prefix is shortened, so a blocking thread's name never
    // equals a worker's ("<prefix>-b-<j>" against "<prefix>-<i>").
    b.name_prefix = opts.thread_name();
    b.name_tag = "b-";
    if (auto const& start = opts.on_thread_start()) {
      b.on_thread_start = [start, workers](std::size_t j) { start(workers + j); };
    }
    if (auto const& stop = opts.on_thread_stop()) {
      b.on_thread_stop = [stop, workers](std::size_t j) { stop(workers + j); };
    }
    b.on_error = [this](std::exception_ptr e) { report(std::move(e), report_origin::thread_hook); };
    return b;
  }

  void worker_main(worker_ctx& w) {
    w.help_floor = help_floor_of_this_thread();
    run_hook(on_thread_start_, w.index);
    current_worker = &w;
    current_blocking_hook = blocking_hook{&before_blocking_thunk, &w};
    current_note_sink = thread_note_sink{&note_thunk, &w};
    w.diag.value.restore(worker_diag::pack(0, worker_state::searching));
    while (task* t = next_task(w, nullptr)) {
      run(w, t);
    }
    w.diag.value.restore(worker_diag::pack(0, worker_state::stopped));
    current_blocking_hook = blocking_hook{};
    current_note_sink = thread_note_sink{};
    current_worker = nullptr;
    run_hook(on_thread_stop_, w.index);
  }

  /// Runs a thread hook of executor_options; what escapes it goes to the handler.
  void run_hook(std::function<void(std::size_t)> const& hook, std::size_t index) noexcept {
    if (!hook) {
      return;
    }
    try {
      hook(index);
    } catch (...) {
      report(std::current_exception(), report_origin::thread_hook);
    }
  }

  static void before_blocking_thunk(void* arg) noexcept {
    auto& w = *static_cast<worker_ctx*>(arg);
    w.core->before_blocking(w);
  }

  /// The sink of a worker's (or guest's) blocking notes (detail/sync/wait_note.hpp): the wait
  /// of the task at its current depth.
  static auto note_thunk(void* arg, std::uint64_t note) noexcept -> std::uint64_t {
    return static_cast<worker_ctx*>(arg)->diag.value.set_wait(note);
  }

  static void guest_blocking_thunk(void* arg) noexcept {
    auto& g = *static_cast<worker_ctx*>(arg);
    g.core->before_blocking(g);
    if (g.outer_hook.fn != nullptr) {
      g.outer_hook.fn(g.outer_hook.arg);
    }
  }

  void release_guest(worker_ctx& g) noexcept {
    // seq_cst: (G2) the guest is gone before we read stopping_; pairs with try_terminate()'s
    // load of guests_: a worker that saw this guest and parked is in the sleeper list by
    // then (it registered before its check), so the wake_all() below reaches it.
    guests_.value.fetch_sub(1, std::memory_order_seq_cst);
    // (S2) seq_cst: the slot is free before we look for threads waiting for one; pairs with
    // (S1) in enter_guest_waiting(). Also a release: pairs with the acquire CAS in
    // enter_guest().
    g.claimed.store(false, std::memory_order_seq_cst);
    // seq_cst: see (S2).
    if (slot_waiters_.value.load(std::memory_order_seq_cst) != 0) {
      // release: pairs with the acquire load in enter_guest_waiting().
      slot_epoch_.value.fetch_add(1, std::memory_order_release);
      futex_wake_all(slot_epoch_.value);
    }
    // seq_cst: see (G2).
    if (stopping_.load(std::memory_order_seq_cst)) {
      // Idle workers that could not terminate while we were here re-evaluate.
      idle_.wake_all();
    }
  }

  /// The wait of a worker past half of its stack ("Helping depth" in the file comment): it
  /// runs only tasks from its own deque (what the code on its stack pushed); when none is left
  /// it sleeps on its parker until `until` is set. Before it sleeps it lets a searcher see
  /// what its deque still holds (the (N1) wake-up), so a task there is not stranded while it
  /// sleeps.
  void wait_restricted(worker_ctx& w, completion& until) noexcept {
    flush_next(w);
    while (!until.is_set()) {
      if (auto t = w.tasks.pop_lifo()) {
        run(w, *t);
        continue;
      }
      std::uint32_t const awake = w.diag.value.set_state(worker_state::waiting_asleep);
      until.wait_outside(parker_of(w));
      w.diag.value.restore(awake);
      return;
    }
  }

  /// The wait of a thread inside an isolation region (spindle/isolate.hpp), a worker or a
  /// guest: it runs only tasks of its region, wherever they are queued, and never another.
  ///
  /// Where the region's tasks can be: on this thread's deque, and on any other deque, moved
  /// there by a thief's batch steal or pushed by a task of the region running on another
  /// thread, whose owner may then be busy with an unrelated task for a long time (blocked on
  /// the lock the region's caller holds, say). So the wait takes tasks from its own deque, then
  /// steals one at a time from every other deque, until it has one of its region; every other
  /// task it took on the way is set aside and, before the region's task runs or the wait
  /// sleeps, pushed back onto its own deque, in the order it had there, where every thread
  /// can take it (a task stolen from another deque thus moves to this one; its owner, looking
  /// for it, finds it taken and waits as for any stolen task). oneTBB's isolated waits take
  /// only tasks of their isolation too, from their own pool and by stealing; oneTBB can look
  /// at a task before it takes it (its task pool is locked by the thief), a Chase-Lev thief
  /// cannot, hence the move. When nothing of the region is anywhere, the wait sleeps until
  /// `until` is set or a task may have become reachable ((I1)/(I2) at
  /// scheduler::wake_isolated()).
  void wait_isolated(worker_ctx& w, completion& until) noexcept {
    std::uint64_t const region = current_isolation;
    std::uint64_t const outer_region = w.diag.value.set_region(region);
    std::vector<task*> aside;
    for (;;) {
      flush_next(w);
      if (until.is_set()) {
        w.diag.value.set_region(outer_region);
        return;
      }
      if (task* const t = find_in_region(w, region, aside)) {
        run(w, t);
        continue;
      }
      enter_isolated_sleep(w);
      task* const t = find_in_region(w, region, aside);
      if (t == nullptr && until.arm(&parker_of(w))) {
        std::uint32_t const awake = w.diag.value.set_state(worker_state::waiting_asleep);
        parker_of(w).park();
        w.diag.value.restore(awake);
      }
      leave_isolated_sleep(w);
      if (t != nullptr) {
        run(w, t);
      }
    }
  }

  /// A task of `region` for the isolated wait of `w`, or nullptr when none is reachable; what
  /// else it took is back on w's deque when it returns (see wait_isolated()). `aside` is
  /// scratch space, empty on entry and on return.
  auto find_in_region(worker_ctx& w, std::uint64_t region, std::vector<task*>& aside) noexcept
      -> task* {
    task* found = nullptr;
    std::size_t popped = 0;
    while (auto t = w.tasks.pop_lifo()) {
      if ((*t)->isolation == region) {
        found = *t;
        break;
      }
      set_aside(aside, *t);
      ++popped;
    }
    // Every other deque, one task at a time, until one of the region turns up or a whole pass
    // finds every deque empty. A steal that lost a race (`retry`) is tried again: unlike a
    // search for any task, this one may not stop while a task of the region could be left.
    bool retry = true;
    while (found == nullptr && retry) {
      retry = false;
      for (std::size_t v = 0; v < stealers_.size() && found == nullptr; ++v) {
        if (v == w.index) {
          continue;
        }
        for (;;) {
          auto r = stealers_[v].steal();
          if (r.is_retry()) {
            retry = true;
            break;
          }
          if (!r.is_stolen()) {
            break;
          }
          if ((*r.value)->isolation == region) {
            found = *r.value;
            break;
          }
          set_aside(aside, *r.value);
        }
      }
    }
    if (!aside.empty()) {
      put_back(w, aside, popped);
    }
    return found;
  }

  /// Keeps a task an isolated wait took and may not run; if there is no room for it, the task
  /// goes back onto the thread's deque at once (where the search will not take it again).
  static void set_aside(std::vector<task*>& aside, task* t) noexcept {
    try {
      aside.push_back(t);
    } catch (...) {
      // No memory for the list: nothing better than ending here, as for any allocation the
      // scheduler cannot do without.
      std::fputs("spindle: out of memory in an isolated wait\n", stderr);
      std::terminate();
    }
  }

  /// Pushes back onto w's deque what find_in_region() set aside: first what it stole (oldest
  /// first), then the `popped` tasks it took from w's deque, so that those keep their order.
  /// Then the (N1) wake-up for them, and (I2) if one belongs to a region (its own isolated
  /// wait may be looking for it).
  void put_back(worker_ctx& w, std::vector<task*>& aside, std::size_t popped) noexcept {
    bool regional = false;
    auto const push_one = [&](task* t) {
      regional = regional || t->isolation != 0;
      try {
        w.tasks.push(t);
      } catch (...) {
        push_announced(nullptr, t);
      }
    };
    for (std::size_t i = popped; i < aside.size(); ++i) {
      push_one(aside[i]);
    }
    for (std::size_t i = popped; i > 0; --i) {
      push_one(aside[i - 1]);
    }
    aside.clear();
    // (N1) and (I2): the tasks are back in the deque before we look for sleepers; pairs with
    // the fences after (P1) in park() and (I1) in enter_isolated_sleep().
    fence_seq_cst();
    if (idle_.should_wake()) {
      idle_.wake_one();
    }
    if (regional) {
      wake_isolated(&w);
    }
  }

  /// A guest's search: its own deque, then one task from each victim in turn. A guest takes
  /// no batch (its deque holds only what it pushed itself, so nothing is left there unannounced
  /// when it leaves), never looks at the injector (an outside caller does not pick up unrelated
  /// submissions) and is not counted by the idle set (notifiers never rely on it).
  auto find_task_as_guest(worker_ctx& g) noexcept -> task* {
    if (auto t = g.tasks.pop_lifo()) {
      return *t;
    }
    return steal_rounds(g, [](spindle::stealer<task*>& victim) { return victim.steal(); });
  }

  /// A guest's wait for `until`: help while anything is runnable, spin a little, yield up to
  /// linger_yields times, then sleep on the slot's parker until the completion is set.
  ///
  /// The yields are for the end of an outside parallel_for or join: the guest has run its own
  /// part and waits for the half a worker stole, which is usually a leaf away from done. A
  /// guest that parked there would be woken at once and pay a whole wake-up latency, a large
  /// part of a short loop (measurements: docs/performance.md, Executor).
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
      std::uint32_t const awake = g.diag.value.set_state(worker_state::waiting_asleep);
      until.wait_outside(g.guest_parker);
      g.diag.value.restore(awake);
      return;
    }
  }

  std::vector<std::unique_ptr<native_thread>> threads_;
#if defined(SPINDLE_MODEL_CHECK)
  parker model_outside_[::spindle::model::max_threads];
#endif

  mutex handler_mu_;
  exception_handler handler_;
  std::function<void(std::size_t)> on_thread_start_;
  std::function<void(std::size_t)> on_thread_stop_;
  std::stop_source stop_on_shutdown_;
  blocking_pool blocking_;
  std::chrono::steady_clock::time_point const started_at_ = std::chrono::steady_clock::now();
  // Guards shown_uptime_ and each worker's worker_counters::shown_parked_ns: what the last
  // metrics() snapshot reported, which the next one never goes below.
  mutable mutex metrics_mu_;
  mutable std::chrono::nanoseconds shown_uptime_{0};
  mutex shutdown_mu_;

  void ref() noexcept {
    // relaxed: taken while another reference (the handle's) is known to be held.
    refs_.fetch_add(1, std::memory_order_relaxed);
  }
  void unref() noexcept {
    // acq_rel: release orders this holder's accesses before the delete; acquire makes every
    // other holder's accesses visible to whichever deletes.
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete this;
    }
  }

  // Threads of other executors waiting for a guest slot, and the futex word they sleep on;
  // see (S1)/(S2).
  cache_padded<atomic<std::uint32_t>> slot_waiters_{};
  cache_padded<atomic<std::uint32_t>> slot_epoch_{};

  // INVARIANT: the executor's handle (until its destructor) plus outside wakers in progress.
  atomic<std::size_t> refs_{1};

  // Diagnostics (spindle/dump.hpp).
  std::uint64_t const id_ = next_executor_id();
  // Whether registry() lists it (not kept under the model checker).
  [[maybe_unused]] bool listed_ = true;
  executor_options::report_sink stall_sink_;
  std::unique_ptr<stall_watchdog> watchdog_;
  // The next-slot watch (start_next_watch()): next_watch_mu_ guards the owner and the closed
  // flag; next_watch_decided_ is set under it, once a watch started or could not start.
  mutex next_watch_mu_;
  std::unique_ptr<next_slot_watch> next_watch_owner_;
  bool next_watch_closed_ = false;
  atomic<bool> next_watch_decided_{false};
  std::string next_watch_name_;
  // The listed coroutines (detail/coro/coro_registry.hpp), and whether every spawned
  // coroutine is listed (executor_options::list_coroutines) or only the named ones.
  coro_registry listed_coroutines_;
  bool list_all_coroutines_ = false;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
