// SPDX-License-Identifier: BSL-1.0
#pragma once
// spindle::executor: a work-stealing thread pool, and `join`, its allocation-free fork-join.
//
// What it is: N worker threads, each with its own Chase-Lev deque (spindle/deque.hpp), plus a
// global injection queue for tasks submitted from other threads. A worker runs its own tasks
// newest first, checks the injector every 61 tasks, and when idle steals about half of a
// random victim's deque. Idle workers spin briefly, then sleep; an idle executor uses no CPU.
// Design and citations: detail/executor/scheduler.hpp (scheduling, parking, termination),
// detail/executor/executor_core.hpp (guests, shutdown),
// detail/executor/idle_set.hpp (parking, with the no-lost-wake-up argument),
// detail/executor/task.hpp (task storage).
//
// API in brief:
//   executor ex;  executor ex{n};           n workers (default: one per usable processor)
//   auto h = ex.spawn(f);  h.join();        result or rethrown exception
//   ex.post(f);                             fire and forget; exceptions go to the handler
//   auto [a, b] = spindle::join(ex, f, g);  both results; g may run in parallel
//   executor ex{executor_options().workers(4).thread_name("io")}  hooks, stack, pinning
//   ex.spawn([](std::stop_token t) {...})   the shutdown token, for long tasks
//   h.cancel();                             a task that has not started never will
//   ex.spawn_blocking(f);                   on a separate pool: blocking I/O, legacy APIs
//   ex.metrics(); ex.shutdown();
//   ex.spawn(f, spindle::name("parse"))     a name that spindle::dump(ex) shows (dump.hpp)
// task_group (spindle/task_group.hpp) and parallel_for / parallel_reduce
// (spindle/parallel.hpp) build on these.
//
// Thread safety: every member function may be called from any thread, including the
// executor's own workers, except shutdown() (and the destructor), which must not run on one of
// this executor's workers or blocking threads (a spawn_blocking task), nor inside a join,
// parallel_for or parallel_reduce on it.
//
// Progress: submission and stealing are lock-free on the deques; the injector and the sleeper
// list take a short futex mutex. Waiting (join, join_handle::join) blocks.
//
// Happens-before: whatever a thread did before spawn(f)/post(f)/join(ex, f, g) is visible to
// f when it runs; whatever f did is visible to whoever joins it.
//
// Memory: one node per spawn/post (the callable and result live in it), from a per-thread
// pool when it fits in detail::pool_payload bytes (detail/executor/task_pool.hpp), else from
// operator new; join, parallel_for and parallel_reduce allocate nothing per task. Deques grow on
// demand.
//
// Shutdown: the destructor and shutdown() finish every accepted task, including the tasks
// those tasks spawn, then join the threads. Afterwards spawn/post from outside throw
// std::logic_error and do not run the callable.
//
// Coroutines: `ex.spawn(t)` runs a spindle::task<T> (task.hpp) and `co_await ex.schedule()`
// moves a coroutine onto the executor; a coroutine that waits (a channel's async_send or
// async_recv, async_select, sleep_for, a join handle) is suspended and holds no worker, and is
// resumed on a worker when its wait completes. A worker that wakes a coroutine keeps it to run
// next, when its current task returns or suspends (a ping-pong of two coroutines then stays on
// one warm core); if that task keeps the thread instead (it computes on, or blocks by means
// spindle does not see), the executor's next-slot watch, a thread of its own that looks every
// millisecond while coroutines run, moves the coroutine to another worker within one to two
// milliseconds (worker_metrics::stuck_resumptions counts those moves).
//
// When not to use it: for blocking I/O (a blocked task holds a worker), or for plain-function
// tasks that wait on each other through anything but join/task_group (a worker blocked
// elsewhere cannot help): make such a task a coroutine and co_await instead.
//
// Example: tests/executor_test.cpp (Example) and examples/executor_fib.cpp.

#include <spindle/detail/coro/coro_root.hpp>
#include <spindle/detail/coro/schedule.hpp>
#include <spindle/detail/executor/diag.hpp>
#include <spindle/detail/executor/executor_core.hpp>
#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/sync/available_cpus.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/diagnostics.hpp>
#include <spindle/executor_options.hpp>
#include <spindle/executor_stats.hpp>
#include <spindle/join_handle.hpp>
#include <spindle/task.hpp>
#include <spindle/task_traits.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <stop_token>
#include <type_traits>
#include <utility>
#include <vector>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

class executor;

namespace detail {
/// The engine of `ex`, for the library's algorithms.
auto core_of(executor& ex) noexcept -> executor_core&;
}  // namespace detail

/// What try_spawn and try_post report.
enum class submit_status : std::uint8_t {
  accepted,  ///< the task was queued and will run
  full,      ///< the executor's bounded injector is full (executor_options::injector_capacity)
  closed     ///< shutdown began: nothing more is accepted from outside the workers
};

/// try_post's result: how the submission ended. The shape of every spindle result
/// (channel_result.hpp): `if (r)` is true exactly when the task was accepted.
struct [[nodiscard]] try_post_result {
  submit_status status = submit_status::closed;

  explicit operator bool() const noexcept { return status == submit_status::accepted; }
  [[nodiscard]] auto is_accepted() const noexcept -> bool {
    return status == submit_status::accepted;
  }
  [[nodiscard]] auto is_full() const noexcept -> bool { return status == submit_status::full; }
  [[nodiscard]] auto is_closed() const noexcept -> bool { return status == submit_status::closed; }
};

/// try_spawn's result: the status, and the task's handle, valid exactly when it was accepted.
/// The same status and helpers as try_post_result, repeated rather than inherited so that the
/// two members stay in one class: `auto [status, handle] = ex.try_spawn(f);` works.
template <class R>
struct [[nodiscard]] try_spawn_result {
  submit_status status = submit_status::closed;
  join_handle<R> handle;

  explicit operator bool() const noexcept { return status == submit_status::accepted; }
  [[nodiscard]] auto is_accepted() const noexcept -> bool {
    return status == submit_status::accepted;
  }
  [[nodiscard]] auto is_full() const noexcept -> bool { return status == submit_status::full; }
  [[nodiscard]] auto is_closed() const noexcept -> bool { return status == submit_status::closed; }
};

class executor {
 public:
  /// One worker per processor this process may use: the processors in its CPU affinity mask
  /// (sched_getaffinity on Linux; std::thread::hardware_concurrency() elsewhere), capped by its
  /// cgroup v2 CPU quota (/sys/fs/cgroup/cpu.max, quota / period rounded up), at least one.
  /// Read once per process (detail/sync/available_cpus.hpp). More workers than usable
  /// processors would only take turns, and their spinning would slow the ones that run.
  ///
  /// Throws: std::system_error if a thread cannot start; std::bad_alloc.
  executor() : executor(default_workers()) {}

  /// `workers` worker threads; `on_unhandled` receives exceptions escaping posted tasks
  /// (default: print a message and std::terminate).
  ///
  /// Throws: std::invalid_argument if workers == 0; std::system_error if a thread cannot
  /// start; std::bad_alloc.
  explicit executor(std::size_t workers, unhandled_exception_handler on_unhandled = {})
      : core_(new detail::executor_core(workers, std::move(on_unhandled))) {}

  /// An executor made as `opts` says (spindle/executor_options.hpp): worker count (not set:
  /// the default above), thread names, start/stop hooks, stack size, CPU pinning, the handler
  /// and the blocking pool's bounds.
  ///
  /// Throws: std::invalid_argument for a setting that cannot be honoured (workers(0), as
  /// executor(0) does; a stack below the system's minimum or too large to round up to whole
  /// pages, a CPU outside the process's affinity mask, an empty CPU set,
  /// max_blocking_threads == 0), before any thread starts; std::system_error if a thread
  /// cannot start; std::bad_alloc.
  explicit executor(executor_options opts) : core_(make_core(std::move(opts))) {}

  executor(executor const&) = delete;
  auto operator=(executor const&) -> executor& = delete;

  /// Finishes every accepted task, then joins the workers (see shutdown()).
  /// Preconditions: not called from one of this executor's workers or blocking threads, nor
  /// inside a join of its own (it would wait for itself: a message and std::terminate).
  ~executor() = default;

  /// Runs `fn` on a worker and returns a handle to its result.
  ///
  /// Thread safety: any thread. From a worker of this executor, or from a thread inside a
  /// join/parallel_for/parallel_reduce of this executor that holds a guest slot (see
  /// detail::run_as_root), the task goes to that thread's deque (and is still accepted during
  /// shutdown); from any other thread, to the injector.
  /// Throws: std::logic_error after shutdown() began, from a thread that is not one of this
  /// executor's workers or guests (fn is not run); std::invalid_argument if fn is a null
  /// pointer to function or member; std::bad_alloc; whatever moving fn throws.
  /// Returns: join_handle<task_result_t<Fn>>. (Spelled `auto` so that a callable that is not
  /// a task_callable is rejected by the concept, with its name in the diagnostic, rather than
  /// by a substitution failure in the return type.)
  template <task_callable Fn>
  auto spawn(Fn&& fn) {
    detail::check_not_null(fn, "spindle::executor::spawn: fn is a null pointer");
    using node = detail::spawned_task<std::decay_t<Fn>, task_result_t<Fn>>;
    detail::node_ptr<node> owned(detail::new_node<node>(std::decay_t<Fn>(std::forward<Fn>(fn))));
    core_->submit(owned.get());
    return join_handle<task_result_t<Fn>>(core_.get(), owned.release());
  }

  /// As spawn(fn), with a name that spindle::dump() shows while the task runs (see
  /// spindle/diagnostics.hpp): `ex.spawn(f, spindle::name("parse"))`. The task also gets a
  /// process-wide id, shown next to the name.
  template <task_callable Fn>
  auto spawn(Fn&& fn, spindle::name n) {
    detail::check_not_null(fn, "spindle::executor::spawn: fn is a null pointer");
    return spawn(
        detail::named_callable<std::decay_t<Fn>>(std::decay_t<Fn>(std::forward<Fn>(fn)), n));
  }

  /// Runs `fn` on a worker, as spawn(fn), unless that would have to wait: from outside the
  /// workers, when the injector's bound (executor_options::injector_capacity) is reached, it
  /// returns submit_status::full at once, and after shutdown began submit_status::closed; in
  /// both cases fn is not run, and on `full` it is not moved from either, so the caller may
  /// try again with it (on `closed` it may have been, if shutdown began during the call: the
  /// executor takes nothing more from outside anyway). From a
  /// worker it always succeeds (the task goes to the worker's own deque), as it does on an
  /// unbounded executor before shutdown. `handle` is valid exactly when
  /// `status == submit_status::accepted`.
  ///
  /// Throws: std::invalid_argument if fn is a null pointer to function or member;
  /// std::bad_alloc; whatever copying or moving fn throws.
  template <task_callable Fn>
  auto try_spawn(Fn&& fn) -> try_spawn_result<task_result_t<Fn>> {
    detail::check_not_null(fn, "spindle::executor::try_spawn: fn is a null pointer");
    using node = detail::spawned_task<std::decay_t<Fn>, task_result_t<Fn>>;
    if (core_->local() != nullptr) {
      return {submit_status::accepted, spawn(std::forward<Fn>(fn))};
    }
    auto const status = take_room();
    if (status != submit_status::accepted) {
      return {status, {}};
    }
    node* raw = nullptr;
    try {
      raw = detail::new_node<node>(std::decay_t<Fn>(std::forward<Fn>(fn)));
    } catch (...) {
      give_room_back();
      throw;
    }
    detail::node_ptr<node> owned(raw);
    if (!core_->push_outside(owned.get())) {
      return {submit_status::closed, {}};
    }
    return {submit_status::accepted, join_handle<task_result_t<Fn>>(core_.get(), owned.release())};
  }

  /// As try_spawn(fn), fire and forget (see post()): `accepted`, `full` or `closed`, with the
  /// same rules for when fn is moved from.
  template <task_callable Fn>
  auto try_post(Fn&& fn) -> try_post_result {
    detail::check_not_null(fn, "spindle::executor::try_post: fn is a null pointer");
    using node = detail::posted_task<std::decay_t<Fn>>;
    if (core_->local() != nullptr) {
      post(std::forward<Fn>(fn));
      return {submit_status::accepted};
    }
    auto const status = take_room();
    if (status != submit_status::accepted) {
      return {status};
    }
    node* raw = nullptr;
    try {
      raw = detail::new_node<node>(std::decay_t<Fn>(std::forward<Fn>(fn)),
                                   &detail::executor_core::report_thunk, core_.get());
    } catch (...) {
      give_room_back();
      throw;
    }
    detail::node_ptr<node> owned(raw);
    if (!core_->push_outside(owned.get())) {
      return {submit_status::closed};
    }
    static_cast<void>(owned.release());
    return {submit_status::accepted};
  }

  /// Runs `fn` on the executor's blocking pool, a separate set of threads for calls that
  /// block (file I/O, a blocking legacy API, a sleep), so that they never hold a worker. The
  /// pool starts a thread when none is idle, up to executor_options::max_blocking_threads
  /// (512 by default; beyond it tasks wait in a FIFO queue), and a thread idle for
  /// executor_options::blocking_keep_alive (10 s) exits (tokio's spawn_blocking policy).
  /// Returns a join_handle as spawn() does: join() from a worker helps meanwhile, and
  /// `co_await h` from a coroutine holds no thread. cancel() takes back a task still queued.
  /// Shutdown finishes the workers' tasks first, then every accepted blocking task.
  ///
  /// When to use it: for a call that sleeps in the kernel or in a library you cannot change.
  /// When not: waiting on spindle's own channels, timers or tasks is better done by a
  /// coroutine (`co_await rx.async_recv()`), which holds no thread at all, where every
  /// blocking task holds one pool thread (about 8 MiB of address space, by default) for as
  /// long as it blocks.
  ///
  /// Thread safety: any thread. Throws: std::logic_error after shutdown() began (from a
  /// thread that is not a worker; fn is not run); std::invalid_argument if fn is a null
  /// pointer to function or member; std::system_error if the pool has no thread and cannot
  /// start one; std::bad_alloc.
  template <task_callable Fn>
  auto spawn_blocking(Fn&& fn) {
    detail::check_not_null(fn, "spindle::executor::spawn_blocking: fn is a null pointer");
    using node = detail::spawned_task<std::decay_t<Fn>, task_result_t<Fn>>;
    detail::node_ptr<node> owned(detail::new_node<node>(std::decay_t<Fn>(std::forward<Fn>(fn))));
    core_->submit_blocking(owned.get());
    return join_handle<task_result_t<Fn>>(core_.get(), owned.release());
  }

  /// Runs `fn(token)` on a worker, where `token` is the executor's shutdown token: shutdown()
  /// requests it before it waits for the accepted tasks, so a long task that polls it can end
  /// early. A task that does not look still runs to its end, as every accepted task does.
  /// Otherwise as spawn(f).
  template <stoppable_task_callable Fn>
  auto spawn(Fn&& fn) {
    detail::check_not_null(fn, "spindle::executor::spawn: fn is a null pointer");
    return spawn(bind_token(std::forward<Fn>(fn)));
  }

  /// As spawn(fn) for a callable that takes the shutdown token, with a name for
  /// spindle::dump() (see spawn(fn, name)).
  template <stoppable_task_callable Fn>
  auto spawn(Fn&& fn, spindle::name n) {
    detail::check_not_null(fn, "spindle::executor::spawn: fn is a null pointer");
    return spawn(bind_token(std::forward<Fn>(fn)), n);
  }

  /// Runs coroutine `t` on this executor and returns a handle to its result: join() from a
  /// thread, or co_await from a coroutine. The coroutine starts on a worker, and every time it
  /// is resumed after a wait (a channel, a select, a timer, a join handle, another task) it
  /// continues on a worker of this executor. Waiting never holds a worker.
  ///
  /// Shutdown waits for a spawned coroutine as for any task, including while it is suspended:
  /// a coroutine suspended on a channel that nobody will send to or close keeps shutdown
  /// waiting, as a task blocked in recv() would (README, "Contracts a program must keep").
  ///
  /// Thread safety and Throws: as spawn(f); misuse (an empty or started task) is reported in
  /// every build.
  template <class R>
  auto spawn(task<R> t) -> join_handle<R> {
    return spawn_coroutine(std::move(t), nullptr);
  }

  /// As spawn(t), with a name: spindle::dump() lists the coroutine with its name and a
  /// process-wide id, and what it is suspended on (see executor_options::list_coroutines,
  /// which lists unnamed ones too).
  template <class R>
  auto spawn(task<R> t, spindle::name n) -> join_handle<R> {
    return spawn_coroutine(std::move(t), n.text());
  }

  /// `co_await ex.schedule()` moves the calling coroutine onto this executor: it continues on
  /// one of its workers, and is resumed there after every later wait. From a coroutine already
  /// on this executor it yields: the coroutine goes to the back of the worker's queue.
  ///
  /// Throws (from the co_await): std::logic_error after shutdown() began, when awaited from a
  /// thread that is not one of this executor's workers.
  [[nodiscard]] auto schedule() noexcept -> detail::schedule_awaiter {
    return detail::schedule_awaiter(core_.get());
  }

  /// Runs `fn` on a worker, fire and forget. An exception escaping fn goes to the
  /// unhandled-exception handler; it is never silently dropped.
  ///
  /// Thread safety and Throws: as spawn().
  template <task_callable Fn>
  void post(Fn&& fn) {
    detail::check_not_null(fn, "spindle::executor::post: fn is a null pointer");
    using node = detail::posted_task<std::decay_t<Fn>>;
    detail::node_ptr<node> owned(detail::new_node<node>(
        std::decay_t<Fn>(std::forward<Fn>(fn)), &detail::executor_core::report_thunk, core_.get()));
    core_->submit(owned.get());
    static_cast<void>(owned.release());
  }

  /// As post(fn), with a name for spindle::dump() (see spawn(fn, name)).
  template <task_callable Fn>
  void post(Fn&& fn, spindle::name n) {
    detail::check_not_null(fn, "spindle::executor::post: fn is a null pointer");
    post(detail::named_callable<std::decay_t<Fn>>(std::decay_t<Fn>(std::forward<Fn>(fn)), n));
  }

  /// As post(f), for a callable that takes the executor's shutdown token (see spawn).
  template <stoppable_task_callable Fn>
  void post(Fn&& fn) {
    detail::check_not_null(fn, "spindle::executor::post: fn is a null pointer");
    post(bind_token(std::forward<Fn>(fn)));
  }

  /// As post(fn) for a callable that takes the shutdown token, with a name for spindle::dump().
  template <stoppable_task_callable Fn>
  void post(Fn&& fn, spindle::name n) {
    detail::check_not_null(fn, "spindle::executor::post: fn is a null pointer");
    post(bind_token(std::forward<Fn>(fn)), n);
  }

  /// The token shutdown() requests (see spawn with a std::stop_token-taking callable).
  [[nodiscard]] auto shutdown_token() const noexcept -> std::stop_token {
    return core_->shutdown_token();
  }

  /// Replaces the handler for exceptions escaping posted tasks. An empty function restores
  /// the default (print and std::terminate). Thread safety: any thread.
  void set_unhandled_exception_handler(unhandled_exception_handler handler) {
    core_->set_handler(std::move(handler));
  }

  /// Per-worker counters (relaxed snapshots): the first four counters of each worker's
  /// metrics(), which reports all of them and more. Deprecated at 0.1.0, removed at 1.0.
  [[nodiscard, deprecated("spindle::executor::stats() is a subset of metrics(): use "
                          "metrics().workers[i] (tasks_run, tasks_stolen, steal_attempts, "
                          "times_parked)")]] auto
  stats() const -> std::vector<worker_stats> {
    return core_->stats();
  }

  /// Per-worker counters and times, queue depths, and the blocking pool's size: a relaxed
  /// snapshot (spindle/executor_stats.hpp). Keeping them costs no shared write per task; the
  /// fib(30) overhead is in docs/performance.md. Thread safety: any thread.
  [[nodiscard]] auto metrics() const -> executor_metrics { return core_->metrics(); }

  /// Number of worker threads.
  [[nodiscard]] auto size() const noexcept -> std::size_t { return core_->worker_count(); }

  /// Whether the calling thread is one of this executor's workers.
  [[nodiscard]] auto is_worker_thread() const noexcept -> bool {
    return core_->own_worker() != nullptr;
  }

  /// Stops accepting tasks from outside, finishes every accepted task (and the tasks they
  /// spawn), then joins the workers. Idempotent.
  ///
  /// Throws: std::logic_error when called from one of this executor's workers (a worker
  /// cannot wait for itself to exit), from one of its blocking threads (shutdown waits for
  /// every spawn_blocking task, the caller's included), or from inside a join, parallel_for or
  /// parallel_reduce of this executor (the caller then holds a guest slot, which keeps the
  /// workers running). It throws before changing anything: the executor keeps running.
  void shutdown() { core_->shutdown(); }

 private:
  // The engine is reachable only by the library's own algorithms (task_group, join, the
  // parallel loops), through detail::core_of().
  friend auto detail::core_of(executor& ex) noexcept -> detail::executor_core&;

  static auto default_workers() noexcept -> std::size_t { return detail::available_cpus(); }

  /// spawn(task) with or without a name (a listed coroutine, detail/coro/coro_registry.hpp).
  template <class R>
  auto spawn_coroutine(task<R> t, char const* name) -> join_handle<R> {
    detail::check_startable(detail::task_access::handle(t),
                            "spindle::executor::spawn of an empty or already started task");
    using node = detail::coro_root<R>;
    detail::coro_registry* const list = core_->coroutine_list(name != nullptr);
    std::unique_ptr<detail::coro_record> record;
    if (list != nullptr) {
      record = std::make_unique<detail::coro_record>();
      record->name = name;
      record->id = detail::next_named_id();
    }
    detail::node_ptr<node> owned(
        detail::new_node<node>(std::move(t), core_.get(), list, record.get()));
    // The root owns the record from its construction on (and unlists it if submit throws).
    static_cast<void>(record.release());
    core_->submit(static_cast<detail::task*>(owned.get()));
    return join_handle<R>(core_.get(), owned.release());
  }

  static auto make_core(executor_options opts) -> detail::executor_core* {
    if (opts.workers() == std::size_t{0}) {
      throw std::invalid_argument(
          "spindle::executor_options::workers is 0 (leave it unset for the default count)");
    }
    std::size_t const workers = opts.workers().value_or(default_workers());
    return new detail::executor_core(workers, std::move(opts));
  }

  /// try_spawn/try_post from outside: a place in a bounded injector, or why there is none.
  auto take_room() noexcept -> submit_status {
    if (core_->stopping()) {
      return submit_status::closed;
    }
    if (core_->bounded() && !core_->try_take_room()) {
      return submit_status::full;
    }
    return submit_status::accepted;
  }
  void give_room_back() noexcept {
    if (core_->bounded()) {
      core_->cancel_room();
    }
  }

  template <class Fn>
  auto bind_token(Fn&& fn) {
    return [f = std::decay_t<Fn>(std::forward<Fn>(fn)),
            token = core_->shutdown_token()]() mutable -> decltype(auto) {
      return std::invoke(f, token);
    };
  }

  /// Shuts the core down and drops the handle's reference (executor_core.hpp, "Lifetime").
  struct core_release {
    void operator()(detail::executor_core* core) const noexcept {
      detail::executor_core::release_handle(core);
    }
  };

  std::unique_ptr<detail::executor_core, core_release> core_;
};

inline auto detail::core_of(executor& ex) noexcept -> executor_core& {
  return *ex.core_;
}

namespace detail {

template <class Fn>
using stored_result_t = typename result_slot<std::invoke_result_t<Fn&>>::stored;

/// Runs `fn`, from a thread that is neither a worker nor a guest of `core`, as a root task
/// and waits for it. When a guest slot is free the calling thread takes it and runs `fn`
/// itself as if it were a worker (its joins push onto the slot's deque, where workers steal
/// them, and it helps while it waits), so the work starts at once instead of after a
/// sleeping worker wakes. Otherwise the job goes to the injector and the caller sleeps. The
/// job lives in this frame either way: no allocation. A thread that works for another
/// executor (a worker or guest of it) never takes that second path while this executor
/// runs: it waits for a slot instead (nested executors, executor_core::enter_guest_waiting()).
/// `helpers`: how many sleeping workers a guest wakes at once because `fn` is known to split into
/// that much parallel work (an outside parallel loop; see executor_core::wake_for_guest()); 0
/// leaves waking to the pushes. Throws: std::logic_error after shutdown; whatever fn throws.
template <class Fn>
auto run_as_root(executor_core& core, Fn& fn, std::size_t helpers = 0) -> stored_result_t<Fn> {
  // A worker or guest of another executor waits for a slot rather than for this executor's
  // workers, which may be waiting for it (executor_core::enter_guest_waiting()).
  if (worker_ctx* const g =
          current_worker != nullptr ? core.enter_guest_waiting() : core.enter_guest()) {
    core.wake_for_guest(helpers);
    struct leave_guard {
      executor_core& core;
      worker_ctx& g;
      ~leave_guard() { core.leave_guest(g); }
    } const guard{core, *g};
    result_slot<std::invoke_result_t<Fn&>> r;
    r.run(fn);
    return r.take();
  }
  stack_job<Fn, std::invoke_result_t<Fn&>> job(fn, &core.outside_parker());
  core.submit(&job);
  core.wait(job.done);
  return job.result.take();
}

/// rayon's join on the calling worker `w`: push `b`, run `a`, then pop `b` back and run it
/// inline unless a thief took it, in which case help until it is done.
///
/// `b` goes to the private end of the worker's split deque while no other worker is idle
/// (scheduler::push_local). If it is still there when `a` returns, it is the newest private
/// job: every join inside `a` popped its own, spawns go to the public deque, and a
/// publication moves every private job at once. Otherwise it was published, and the public
/// deque is popped as rayon does.
template <class A, class B>
auto join_on_worker(executor_core& core, worker_ctx& w, A& a, B& b)
    -> std::pair<stored_result_t<A>, stored_result_t<B>> {
  stack_job<B, std::invoke_result_t<B&>> job_b(b, &core.parker_of(w));
  core.push_local(w, &job_b);
  result_slot<std::invoke_result_t<A&>> ra;
  ra.run(a);
  if (w.private_count != 0) {
    SPINDLE_ASSERT(w.private_jobs[w.private_count - 1] == &job_b,
                   "join's private job is not the newest one");
    --w.private_count;
    job_b.run_inline();
    auto left = ra.take();
    return {std::move(left), job_b.result.take()};
  }
  for (;;) {
    auto popped = w.tasks.pop_lifo();
    if (!popped) {
      // A thief has job_b: run other tasks until it is done.
      core.wait(job_b.done);
      break;
    }
    if (*popped == &job_b) {
      job_b.run_inline();
      break;
    }
    if (current_isolation != 0 && (*popped)->isolation != current_isolation) [[unlikely]] {
      // Not of our region: an isolated wait inside `a` put it back here (executor_core.hpp,
      // wait_isolated()), and it may not run in the region. Back where it was (the pop made
      // room, so the push cannot fail), and job_b, below it, is found by that same wait.
      w.tasks.push(*popped);
      core.wait(job_b.done);
      break;
    }
    // A task that `a` spawned and did not join sits above job_b: run it, then look again.
    core.run(w, *popped);
  }
  auto left = ra.take();
  return {std::move(left), job_b.result.take()};
}

}  // namespace detail

/// Runs `a` and `b`, possibly in parallel, and returns both results as a std::pair; a void
/// result is returned as spindle::void_result{}. The calling worker runs `a` itself and, if no
/// idle worker stole `b` meanwhile, runs `b` too: forking costs a deque push and pop, with no
/// allocation (`b` waits in this stack frame). Called from a thread that is not one of `ex`'s
/// workers, the caller takes a free guest slot of `ex` and joins as a worker would (see
/// detail::run_as_root); if none is free, the whole join is injected as one task and the
/// caller sleeps until it is done.
///
/// On an executor with executor_options::private_joins, `b` may stay where no thief sees it
/// until `a` forks or waits in the library: `a` must then not wait for `b` by other means.
///
/// If `a` throws, `b` still completes before the exception propagates (b may be running on
/// another worker with references into this frame); if both throw, `a`'s exception wins.
///
/// Thread safety: any thread. Throws: whatever a or b throws; std::invalid_argument if a or
/// b is a null pointer to function or member; std::logic_error after shutdown (from outside);
/// std::bad_alloc when the deque cannot grow.
template <task_callable A, task_callable B>
auto join(executor& ex, A&& a, B&& b)
    -> std::pair<detail::stored_result_t<std::remove_reference_t<A>>,
                 detail::stored_result_t<std::remove_reference_t<B>>> {
  detail::check_not_null(a, "spindle::join: a is a null pointer");
  detail::check_not_null(b, "spindle::join: b is a null pointer");
  auto& core = detail::core_of(ex);
  if (detail::worker_ctx* const w = core.local()) [[likely]] {
    return detail::join_on_worker(core, *w, a, b);
  }
  auto root = [&core, &a, &b] { return detail::join_on_worker(core, *core.local(), a, b); };
  return detail::run_as_root(core, root);
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE
