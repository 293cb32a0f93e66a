// SPDX-License-Identifier: BSL-1.0
#pragma once
// spindle::executor_options: how an executor's threads are made. Included by
// <spindle/executor.hpp>.
//
//   spindle::executor ex(spindle::executor_options()
//                            .workers(4)
//                            .thread_name("render")       // render-0 .. render-3 in top -H
//                            .on_thread_start([](std::size_t i) { set_up_thread_locals(i); })
//                            .stack_size(256 * 1024)
//                            .worker_cpus({{0}, {1}, {2}, {3}}));  // worker i on CPU i
//
// A builder: each setter returns the options, each getter of the same name reads them (a
// designated-initializer aggregate would trip -Wmissing-field-initializers in g++ 12 for every
// field a caller leaves out). Every setting has a default that gives the same executor as
// `executor{}`. The executor checks
// the options in its constructor and throws std::invalid_argument for one it cannot honour
// (zero workers, a stack below the system's minimum, a CPU outside the process's affinity
// mask), before any thread starts.

#include <spindle/detail/sync/config.hpp>
#include <spindle/diagnostics.hpp>

#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

/// Receives an exception that escaped a task passed to executor::post (and one that escaped a
/// thread hook of executor_options).
using unhandled_exception_handler = std::function<void(std::exception_ptr)>;

class executor_options {
 public:
  using thread_hook = std::function<void(std::size_t)>;
  /// Receives a stall report (stall_report()): the dump of the executor as text.
  using report_sink = std::function<void(std::string_view)>;

  /// Worker threads, at least 1: the executor's constructor throws std::invalid_argument for
  /// 0, as executor(0) does. Not set (the default): one per processor this process may use,
  /// as executor{} has: the processors in its CPU affinity mask (sched_getaffinity on Linux,
  /// std::thread::hardware_concurrency() elsewhere), capped by its cgroup v2 CPU quota
  /// (/sys/fs/cgroup/cpu.max, quota / period rounded up), at least one, read once per process.
  auto workers(std::size_t n) -> executor_options& {
    workers_ = n;
    return *this;
  }
  /// The count set, or std::nullopt when none was (the default count).
  [[nodiscard]] auto workers() const noexcept -> std::optional<std::size_t> { return workers_; }

  /// Worker i is named "<prefix>-<i>" and blocking thread j "<prefix>-b-<j>", as `top -H` and
  /// /proc/<pid>/task/*/comm show them (Linux; elsewhere names are ignored). Linux keeps 15
  /// bytes: the prefix is shortened so that "-<i>" or "-b-<j>" always fits whole (so a
  /// blocking thread's name never equals a worker's). Two helper threads of the executor's own
  /// take the prefix too: the stall watchdog "<prefix>-watch0" (stall_report) and, once a
  /// coroutine runs on the executor, the next-slot watch "<prefix>-next0", which moves a woken
  /// coroutine away from a worker whose task keeps its thread (executor.hpp). Default
  /// "spindle"; empty: the threads keep the process's name.
  auto thread_name(std::string prefix) -> executor_options& {
    thread_name_ = std::move(prefix);
    return *this;
  }
  [[nodiscard]] auto thread_name() const noexcept -> std::string const& { return thread_name_; }

  /// Called on each worker and blocking thread, with its index, before it runs any task
  /// (on_thread_start) and after its last one (on_thread_stop). Blocking threads are numbered
  /// from the worker count upwards, so one hook can tell the two kinds apart. An exception
  /// escaping a hook goes to the unhandled-exception handler.
  auto on_thread_start(thread_hook hook) -> executor_options& {
    on_thread_start_ = std::move(hook);
    return *this;
  }
  [[nodiscard]] auto on_thread_start() const noexcept -> thread_hook const& {
    return on_thread_start_;
  }
  auto on_thread_stop(thread_hook hook) -> executor_options& {
    on_thread_stop_ = std::move(hook);
    return *this;
  }
  [[nodiscard]] auto on_thread_stop() const noexcept -> thread_hook const& {
    return on_thread_stop_;
  }

  /// Stack size of every thread the executor starts, in bytes; 0 (the default): the system's
  /// default (8 MiB on glibc). Rounded up to whole pages. The executor's constructor throws
  /// std::invalid_argument for a size below the system's minimum (sysconf(_SC_THREAD_STACK_MIN))
  /// or one too large to round up (within a page of SIZE_MAX). A waiting worker helps with other
  /// tasks only while it has used less than half of the stack it started with (the part
  /// below the thread's static TLS; see "Helping depth" in
  /// detail/executor/executor_core.hpp), so a small stack bounds the nesting of stolen tasks.
  auto stack_size(std::size_t bytes) -> executor_options& {
    stack_size_ = bytes;
    return *this;
  }
  [[nodiscard]] auto stack_size() const noexcept -> std::size_t { return stack_size_; }

  /// CPU pinning: worker i runs only on the CPUs in sets[i % sets.size()]. Empty (the
  /// default): no pinning. Every CPU must be in the process's affinity mask.
  auto worker_cpus(std::vector<std::vector<unsigned>> sets) -> executor_options& {
    worker_cpus_ = std::move(sets);
    return *this;
  }
  [[nodiscard]] auto worker_cpus() const noexcept -> std::vector<std::vector<unsigned>> const& {
    return worker_cpus_;
  }

  /// Private joins (default false): while every other worker is busy, spindle::join keeps its
  /// second half `b` where no thief can see it (the private end of a split deque, as in Lace)
  /// instead of on the worker's Chase-Lev deque, so a fork and its join cost plain loads and
  /// stores instead of a locked instruction: fine-grained fork-join runs about twice as fast
  /// (docs/performance.md, "private joins, a split deque for join"). The private jobs are
  /// published, oldest first, as soon as the forking worker forks again while another worker
  /// searches or sleeps, and before its thread waits in the library (a join's, task group's or join
  /// handle's wait, a channel operation, a blocking call).
  ///
  /// The price is part of join's contract: `b` is not stolen while `a` runs code that neither
  /// forks nor waits in the library. With the option on, `a` must not wait for `b` by other
  /// means (a spin on a flag `b` sets, a std::future `b` fulfils, a mutex `b` releases): that
  /// wait would never end. With it off (the default), an idle worker may take `b` at any time.
  auto private_joins(bool on) -> executor_options& {
    private_joins_ = on;
    return *this;
  }
  [[nodiscard]] auto private_joins() const noexcept -> bool { return private_joins_; }

  /// The handler for exceptions escaping posted tasks and thread hooks; empty (the default):
  /// print a message and std::terminate.
  auto on_unhandled(unhandled_exception_handler handler) -> executor_options& {
    on_unhandled_ = std::move(handler);
    return *this;
  }
  [[nodiscard]] auto on_unhandled() const noexcept -> unhandled_exception_handler const& {
    return on_unhandled_;
  }

  /// The blocking pool behind executor::spawn_blocking: at most this many threads (default
  /// 512, tokio's); more blocking tasks wait in its queue. At least 1.
  auto max_blocking_threads(std::size_t n) -> executor_options& {
    max_blocking_threads_ = n;
    return *this;
  }
  [[nodiscard]] auto max_blocking_threads() const noexcept -> std::size_t {
    return max_blocking_threads_;
  }

  /// Backpressure: at most this many tasks submitted from outside the executor's workers
  /// wait in its injector. When it is full, try_spawn/try_post fail with
  /// submit_status::full, and spawn/post from outside sleep (no spinning) until a worker takes
  /// tasks from it; workers spawning into their own deques are never held back, and
  /// coroutine resumptions are not counted (they never wait and never make a submission
  /// fail; metrics().injector_depth counts them, so it may exceed the bound). 0 (the
  /// default): unbounded.
  auto injector_capacity(std::size_t n) -> executor_options& {
    injector_capacity_ = n;
    return *this;
  }
  [[nodiscard]] auto injector_capacity() const noexcept -> std::size_t {
    return injector_capacity_;
  }

  /// A blocking thread with nothing to do for this long exits (default 10 s).
  auto blocking_keep_alive(std::chrono::milliseconds d) -> executor_options& {
    blocking_keep_alive_ = d;
    return *this;
  }
  [[nodiscard]] auto blocking_keep_alive() const noexcept -> std::chrono::milliseconds {
    return blocking_keep_alive_;
  }

  /// A watchdog: when no task has started on any worker for `after` while work is pending (a
  /// task queued, or a worker inside a task), one thread of the executor's own takes a dump
  /// (spindle/dump.hpp) and passes its text to `sink`, or prints it to stderr when `sink` is
  /// empty. One report per stall: the next comes only after some task started again. The
  /// thread starts with the executor and stops at shutdown, after the workers (a shutdown
  /// that hangs is reported too). 0 (the default): no watchdog, no thread, no cost. A stall
  /// is seen between `after` and 1.25 * `after` after it began (the watchdog looks every
  /// quarter of `after`). An exception escaping `sink` goes to the unhandled-exception
  /// handler.
  auto stall_report(std::chrono::milliseconds after, report_sink sink = {}) -> executor_options& {
    stall_after_ = after;
    stall_sink_ = std::move(sink);
    return *this;
  }
  [[nodiscard]] auto stall_report() const noexcept -> std::chrono::milliseconds {
    return stall_after_;
  }
  [[nodiscard]] auto stall_report_sink() const noexcept -> report_sink const& {
    return stall_sink_;
  }

  /// Lists every coroutine spawned on the executor (`spawn(task)`) for spindle::dump(), with
  /// what each is suspended on. A coroutine spawned with a name is listed in any case; a stall
  /// report (stall_report()) lists them all too. Costs a listed coroutine a lock at its spawn
  /// and at its end, and each of its waits a relaxed store as it suspends and as it wakes;
  /// off (the default), a test at each of those places.
  auto list_coroutines(bool on) -> executor_options& {
    list_coroutines_ = on;
    return *this;
  }
  [[nodiscard]] auto list_coroutines() const noexcept -> bool {
    return list_coroutines_ || stall_after_ > std::chrono::milliseconds(0);
  }

  /// Tracing: `fn(context, event)` is called on the thread where each event happens (a task
  /// spawned, started, finished, stolen; a worker parked or woken; see spindle::trace_kind),
  /// for a user's tracer (Perfetto, LTTng, a counter). It must be quick and may not throw or
  /// call into the executor. nullptr (the default): no tracing; each place an event would be
  /// reported costs one load and a branch never taken.
  auto trace(trace_fn fn, void* context = nullptr) -> executor_options& {
    trace_fn_ = fn;
    trace_context_ = context;
    return *this;
  }
  [[nodiscard]] auto trace() const noexcept -> trace_fn { return trace_fn_; }
  [[nodiscard]] auto trace_context() const noexcept -> void* { return trace_context_; }

 private:
  std::optional<std::size_t> workers_;
  bool list_coroutines_ = false;
  std::string thread_name_ = "spindle";
  thread_hook on_thread_start_;
  thread_hook on_thread_stop_;
  std::size_t stack_size_ = 0;
  std::vector<std::vector<unsigned>> worker_cpus_;
  unhandled_exception_handler on_unhandled_;
  std::size_t injector_capacity_ = 0;
  std::size_t max_blocking_threads_ = 512;
  bool private_joins_ = false;
  std::chrono::milliseconds blocking_keep_alive_{10'000};
  std::chrono::milliseconds stall_after_{0};
  report_sink stall_sink_;
  trace_fn trace_fn_ = nullptr;
  void* trace_context_ = nullptr;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE
