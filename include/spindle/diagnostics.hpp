// SPDX-License-Identifier: BSL-1.0
#pragma once
// What spindle's diagnostics name and report: task names (spindle::name), the snapshot of an
// executor that spindle::dump() prints (executor_dump, with its text and JSON forms), and the
// events a tracer receives (trace_event). Included by <spindle/executor.hpp>; the functions
// that take a snapshot are in <spindle/dump.hpp>.
//
// Why: when a program hangs, a debugger and the library's internals are today the only way to
// see which worker runs what and who waits on whom. Go prints every goroutine with what it is
// blocked on (SIGQUIT, the goroutine profile of pprof), tokio has task dumps
// (tokio/src/runtime/dump.rs) and tokio-console, oneTBB has task_scheduler_observer. A dump
// here is a snapshot of what each worker publishes as it goes (detail/executor/diag_state.hpp):
// the state of the worker, the names of the tasks nested on its stack, the isolation region of
// its wait and the depth of its deque.
//
// Thread safety: the types are plain values. to_text() and to_json() only read their argument.
// Memory: a snapshot allocates (strings and vectors); it is not for a signal handler, but for a
// thread of its own (a watchdog), which may take one while every worker is stuck.

#include <spindle/detail/sync/config.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

/// A task's name for dumps and traces: `ex.spawn(f, spindle::name("parse"))`.
///
/// Only a string literal (or another array of static storage known at compile time) is
/// accepted: the constructor is consteval, so a name cannot outlive its text. A dump taken
/// from another thread may read the name after the task ended; a literal is still there.
/// A task spawned without a name costs nothing more than before; a named one gets a process-
/// wide id (1, 2, ...) that tells two tasks of the same name apart.
class name {
 public:
  template <std::size_t N>
  consteval explicit name(char const (&text)[N]) noexcept : text_(text) {}

  [[nodiscard]] constexpr auto text() const noexcept -> char const* { return text_; }

 private:
  char const* text_;
};

/// What a worker thread (or a thread in one of the executor's guest slots) is doing.
enum class worker_state : std::uint8_t {
  stopped,        ///< not started, exited, or a guest slot nobody holds
  searching,      ///< at top level, looking for a task (own deque, injector, stealing)
  parked,         ///< at top level, asleep for lack of work
  running,        ///< running a task (the innermost of `worker_dump::stack`)
  waiting,        ///< inside a task, waiting for a join (running other tasks meanwhile)
  waiting_asleep  ///< inside a task, waiting for a join, asleep: nothing it may run is queued
};

/// The name of a worker_state as dumps print it.
[[nodiscard]] constexpr auto to_string(worker_state s) noexcept -> char const* {
  switch (s) {
    case worker_state::stopped:
      return "stopped";
    case worker_state::searching:
      return "searching";
    case worker_state::parked:
      return "parked";
    case worker_state::running:
      return "running";
    case worker_state::waiting:
      return "waiting";
    case worker_state::waiting_asleep:
      return "waiting_asleep";
  }
  return "unknown";
}

/// One task on a worker's stack: its name and id, or none (an unnamed task: `name` empty,
/// `id` 0).
struct task_frame {
  std::string name;
  std::uint64_t id = 0;
};

/// One worker thread, or one held guest slot, as a dump saw it.
struct worker_dump {
  std::size_t index = 0;  ///< the worker's index; guest slots follow the workers
  bool guest = false;     ///< a guest slot (a thread that is not a worker, inside a join or loop)
  worker_state state = worker_state::stopped;
  /// The tasks nested on the thread's stack, outermost first: a waiting worker runs other
  /// tasks on top of the one that waits. Deeper than detail::diag_frames, the inner ones are
  /// listed as unnamed.
  std::vector<task_frame> stack;
  /// The isolation region (spindle/isolate.hpp) of the innermost wait, 0 when none.
  std::uint64_t isolation_region = 0;
  std::size_t deque_depth = 0;  ///< tasks in its deque, as thieves see it
  std::uint64_t tasks_run = 0;  ///< tasks it has run so far
};

/// One executor as a dump saw it. The fields are read one by one while the executor runs:
/// exact for a stuck executor, a blur of nearby moments for a busy one.
struct executor_dump {
  std::uint64_t id = 0;              ///< the executor's number in this process (1, 2, ...)
  std::size_t worker_count = 0;      ///< worker threads
  std::size_t injector_depth = 0;    ///< tasks queued from outside, not yet taken by a worker
  std::size_t coroutines = 0;        ///< coroutines bound to the executor, suspended or not
  bool stopping = false;             ///< shutdown has begun
  std::vector<worker_dump> workers;  ///< every worker, then every held guest slot
};

/// What a tracer hears about (executor_options::trace).
enum class trace_kind : std::uint8_t {
  spawned,   ///< a task is about to be queued (spawn, post, a coroutine's start; not join's
             ///< halves); before its `started`. A push that then fails (shutdown, no memory)
             ///< leaves a `spawned` without a `started`.
  started,   ///< a worker began a queued task (also a stolen half of a join, or the
             ///< resumption of a coroutine)
  finished,  ///< ... and it returned
  parked,    ///< a worker went to sleep for lack of work
  woken,     ///< ... and woke
  stolen     ///< a worker took tasks from another worker's deque
};

/// One event. `task` identifies the task record while it lives (a later task may reuse the
/// address); it must not be dereferenced.
struct trace_event {
  static constexpr std::size_t no_worker = static_cast<std::size_t>(-1);
  trace_kind kind = trace_kind::spawned;
  std::size_t worker = no_worker;  ///< the worker (or guest slot) index, or no_worker
  void const* task = nullptr;      ///< nullptr for parked and woken
};

/// A tracer: called on the thread where the event happens, so it must be quick, and it may
/// not throw (it runs inside the scheduler), nor call back into the executor.
using trace_fn = void (*)(void* context, trace_event const& event) noexcept;

namespace detail {

inline void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (char const c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20U) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

}  // namespace detail

/// The dump as text, one line per executor and one per worker, e.g.
///   spindle executor 1: 2 workers, 0 queued in the injector, 0 coroutines bound
///     worker 0: waiting, deque 0, tasks run 3, stack: "outer" #1
///     worker 1: running, deque 0, tasks run 1, stack: "inner" #2
/// A stack `"a" #1 > "b" #2` reads: b runs on the thread on top of a, which waits in a join
/// (a waiting worker runs other tasks meanwhile); the state is the innermost task's. The
/// isolation region is that of the innermost wait.
[[nodiscard]] inline auto to_text(executor_dump const& d) -> std::string {
  std::string out = "spindle executor " + std::to_string(d.id) + ": " +
                    std::to_string(d.worker_count) + " workers, " +
                    std::to_string(d.injector_depth) + " queued in the injector, " +
                    std::to_string(d.coroutines) + " coroutines bound" +
                    (d.stopping ? ", shutting down" : "") + "\n";
  for (auto const& w : d.workers) {
    out += std::string(w.guest ? "  guest " : "  worker ") + std::to_string(w.index) + ": " +
           to_string(w.state);
    if (w.isolation_region != 0) {
      out += ", isolation region " + std::to_string(w.isolation_region);
    }
    out +=
        ", deque " + std::to_string(w.deque_depth) + ", tasks run " + std::to_string(w.tasks_run);
    if (!w.stack.empty()) {
      out += ", stack:";
      bool first = true;
      for (auto const& f : w.stack) {
        out += first ? " " : " > ";
        first = false;
        if (f.id == 0) {
          out += "(unnamed)";
        } else {
          out += '"' + f.name + "\" #" + std::to_string(f.id);
        }
      }
    }
    out += '\n';
  }
  return out;
}

/// The dump as one JSON object:
///   {"executor":1,"worker_count":2,"injector_depth":0,"coroutines":0,"stopping":false,
///    "workers":[{"index":0,"guest":false,"state":"waiting","isolation_region":0,
///                "deque_depth":0,"tasks_run":3,"stack":[{"name":"outer","id":1}]}, ...]}
/// An unnamed task on a stack is {"name":null,"id":0}.
[[nodiscard]] inline auto to_json(executor_dump const& d) -> std::string {
  std::string out = "{\"executor\":" + std::to_string(d.id) +
                    ",\"worker_count\":" + std::to_string(d.worker_count) +
                    ",\"injector_depth\":" + std::to_string(d.injector_depth) +
                    ",\"coroutines\":" + std::to_string(d.coroutines) +
                    ",\"stopping\":" + (d.stopping ? "true" : "false") + ",\"workers\":[";
  bool first = true;
  for (auto const& w : d.workers) {
    out += first ? "" : ",";
    first = false;
    out += "{\"index\":" + std::to_string(w.index) + ",\"guest\":" + (w.guest ? "true" : "false") +
           ",\"state\":\"" + to_string(w.state) +
           "\",\"isolation_region\":" + std::to_string(w.isolation_region) +
           ",\"deque_depth\":" + std::to_string(w.deque_depth) +
           ",\"tasks_run\":" + std::to_string(w.tasks_run) + ",\"stack\":[";
    bool first_frame = true;
    for (auto const& f : w.stack) {
      out += first_frame ? "{\"name\":" : ",{\"name\":";
      first_frame = false;
      if (f.id == 0) {
        out += "null";
      } else {
        detail::append_json_string(out, f.name);
      }
      out += ",\"id\":" + std::to_string(f.id) + "}";
    }
    out += "]}";
  }
  out += "]}";
  return out;
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE
