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
// Synchronization: the scheduler's fields are listed in scheduler.hpp, a worker's in
// worker_ctx.hpp. Here:
//   guests_      raised by enter_guest() (G1) and lowered by release_guest() (G2), seq_cst.
//   worker_ctx::claimed  taken by enter_guest() (acquire CAS), given back by release_guest()
//                (release store).
//   handler_     guarded by handler_mu_. threads_ by shutdown_mu_ once the constructor returned.

#include <spindle/detail/coro/resume.hpp>
#include <spindle/detail/executor/completion.hpp>
#include <spindle/detail/executor/scheduler.hpp>
#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/executor/worker_ctx.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/backoff.hpp>
#include <spindle/detail/sync/blocking_hook.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/detail/sync/parker.hpp>
#include <spindle/executor_stats.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// Where an exception that nobody observed comes from, for the handler's default message.
enum class report_origin : std::uint8_t {
  posted_task,         ///< escaped a task passed to executor::post
  unwaited_task_group  ///< a task of a task_group destroyed without wait()
};

class executor_core final : public scheduler, public resume_target {
 public:
  using exception_handler = std::function<void(std::exception_ptr)>;

  /// Throws: std::invalid_argument if workers == 0; std::system_error if a thread cannot start.
  executor_core(std::size_t workers, exception_handler on_unhandled)
      : scheduler(workers), handler_(std::move(on_unhandled)) {
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
    current_worker = g.previous;
    g.previous = nullptr;
    release_guest(g);
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

  // Coroutines (detail/coro/resume.hpp): this executor as the target of suspended coroutines.
  void bind() noexcept override {
    // seq_cst: see coroutines_ in scheduler.hpp; read by try_terminate(). Raised by a thread
    // that runs for the executor (a worker, or one about to submit to it), so termination is
    // not decided meanwhile.
    coroutines_.value.fetch_add(1, std::memory_order_seq_cst);
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
    // A guest too: the workers cannot terminate while it holds its slot.
    if (core->local() != nullptr) {
      std::fputs("spindle: executor destroyed from one of its own workers or guests\n", stderr);
      std::terminate();
    }
    core->shutdown();
    core->unref();
  }
  using scheduler::submit;

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
  void worker_main(worker_ctx& w) {
    current_worker = &w;
    current_blocking_hook = blocking_hook{&flush_next_thunk, &w};
    while (task* t = next_task(w, nullptr)) {
      run(w, t);
    }
    current_blocking_hook = blocking_hook{};
    current_worker = nullptr;
  }

  static void flush_next_thunk(void* arg) noexcept {
    auto& w = *static_cast<worker_ctx*>(arg);
    w.core->flush_next(w);
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
      until.wait_outside(g.guest_parker);
      return;
    }
  }

  std::vector<std::unique_ptr<os_thread>> threads_;
#if defined(SPINDLE_MODEL_CHECK)
  parker model_outside_[::spindle::model::max_threads];
#endif

  mutex handler_mu_;
  exception_handler handler_;
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

  // INVARIANT: the executor's handle (until its destructor) plus outside wakers in progress.
  atomic<std::size_t> refs_{1};
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
