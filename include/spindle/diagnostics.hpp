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
#include <span>
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

/// What a suspended coroutine (or a worker inside a join) waits on.
enum class wait_kind : std::uint8_t {
  none,       ///< nothing: running, or queued to run
  send,       ///< a channel send (`object`: the channel)
  recv,       ///< a channel receive (`object`: the channel)
  select,     ///< a select of several cases (`cases`; `object`: the channel of the first)
  sleep,      ///< a timer: sleep_for, sleep_until
  join,       ///< a task or coroutine (`object`: the task, as `task_key` shows it)
  when_all,   ///< when_all of `cases` tasks
  when_any,   ///< when_any (or timeout) of `cases` tasks
  lock,       ///< a mutex, shared_mutex or semaphore (`object`: the primitive)
  gate,       ///< a latch or barrier (`object`: the primitive)
  event,      ///< a notify, oneshot or watch
  broadcast,  ///< a broadcast receive (`object`: the broadcast)
  other       ///< an awaitable that does not say (an Asio operation, a foreign awaitable)
};

/// The name of a wait_kind as dumps print it.
[[nodiscard]] constexpr auto to_string(wait_kind k) noexcept -> char const* {
  switch (k) {
    case wait_kind::none:
      return "none";
    case wait_kind::send:
      return "send";
    case wait_kind::recv:
      return "recv";
    case wait_kind::select:
      return "select";
    case wait_kind::sleep:
      return "sleep";
    case wait_kind::join:
      return "join";
    case wait_kind::when_all:
      return "when_all";
    case wait_kind::when_any:
      return "when_any";
    case wait_kind::lock:
      return "lock";
    case wait_kind::gate:
      return "gate";
    case wait_kind::event:
      return "event";
    case wait_kind::broadcast:
      return "broadcast";
    case wait_kind::other:
      return "other";
  }
  return "unknown";
}

/// A wait as a dump saw it. `object` identifies the channel, primitive or task waited on while
/// it lives (the same object shows the same number in every entry of one dump); it is an
/// address, never to be dereferenced. For a join, `task_name` and `task_id` name the awaited
/// task when the dump knows it (a named task running on a worker, or a listed coroutine).
struct wait_dump {
  wait_kind kind = wait_kind::none;
  std::uintptr_t object = 0;
  std::size_t cases = 0;  ///< select: its cases; when_all, when_any: the tasks
  std::string task_name;
  std::uint64_t task_id = 0;
};

/// One task on a worker's stack: its name and id, or none (an unnamed task: `name` empty,
/// `id` 0), and what it waits for when it waits in a join (`waits_for.kind` is `join` then;
/// the tasks above it on the stack run meanwhile).
struct task_frame {
  std::string name;
  std::uint64_t id = 0;
  wait_dump waits_for;
  /// What a join of this task shows as its `object` (0 for an unnamed task, or one nobody can
  /// join): how a dump names the task a join waits for, also across executors (dump_all).
  std::uintptr_t key = 0;
};

/// Where a listed coroutine is.
enum class coroutine_state : std::uint8_t {
  queued,     ///< spawned, not started yet
  running,    ///< started and not suspended in a wait it describes (running, or queued to resume)
  suspended,  ///< suspended in the wait `coroutine_dump::wait` shows
};

/// The name of a coroutine_state as dumps print it.
[[nodiscard]] constexpr auto to_string(coroutine_state s) noexcept -> char const* {
  switch (s) {
    case coroutine_state::queued:
      return "queued";
    case coroutine_state::running:
      return "running";
    case coroutine_state::suspended:
      return "suspended";
  }
  return "unknown";
}

/// A coroutine spawned on the executor (`ex.spawn(task)`) that the executor lists: every named
/// one (`ex.spawn(t, spindle::name("reader"))`), and every one when the executor was built with
/// executor_options::list_coroutines(true) (or a stall report).
struct coroutine_dump {
  std::string name;  ///< empty when unnamed
  std::uint64_t id = 0;
  coroutine_state state = coroutine_state::queued;
  wait_dump wait;  ///< for `suspended`
  /// What a join of this coroutine shows as its `object` (see task_frame::key).
  std::uintptr_t key = 0;
};

/// A channel (or primitive) that listed coroutines or the executor's threads wait on, and how
/// many wait there in one kind of wait (a channel's senders and its receivers are two
/// entries). Only waiters the executor can see are counted: its listed coroutines, and the
/// tasks on its workers (and guest threads) blocked there; a thread outside the executor is
/// not. A select is counted nowhere (it waits on several objects).
struct waiters_dump {
  std::uintptr_t object = 0;
  wait_kind kind = wait_kind::none;  ///< send or recv for a channel; lock, gate, broadcast ...
  std::size_t coroutines = 0;        ///< listed coroutines suspended there
  std::size_t threads = 0;           ///< tasks of the executor's threads blocked there
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
  /// The listed coroutines (see coroutine_dump), oldest first; not every bound coroutine is
  /// listed unless the executor lists them all.
  std::vector<coroutine_dump> listed_coroutines;
  /// For every object that listed coroutines wait on, by kind of wait: how many wait there.
  std::vector<waiters_dump> waiters;
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

/// Names the task each join in `dumps` waits for: a named task on a worker's stack or a listed
/// coroutine of any of them whose key is the join's object.
inline void name_joins(std::span<executor_dump> dumps) {
  auto const find = [&dumps](wait_dump& w) {
    for (executor_dump const& d : dumps) {
      for (worker_dump const& wd : d.workers) {
        for (task_frame const& f : wd.stack) {
          if (f.key != 0 && f.key == w.object) {
            w.task_name = f.name;
            w.task_id = f.id;
            return;
          }
        }
      }
      for (coroutine_dump const& c : d.listed_coroutines) {
        if (c.key != 0 && c.key == w.object) {
          w.task_name = c.name;
          w.task_id = c.id;
          return;
        }
      }
    }
  };
  for (executor_dump& d : dumps) {
    for (worker_dump& wd : d.workers) {
      for (task_frame& f : wd.stack) {
        if (f.waits_for.kind == wait_kind::join && f.waits_for.task_id == 0) {
          find(f.waits_for);
        }
      }
    }
    for (coroutine_dump& c : d.listed_coroutines) {
      if (c.wait.kind == wait_kind::join && c.wait.task_id == 0) {
        find(c.wait);
      }
    }
  }
}

/// Counts, per object and kind of wait, the listed coroutines and the threads' tasks of `d`
/// waiting there (a join or a select is no object's waiter).
inline void count_waiters(executor_dump& d) {
  auto const count = [&d](wait_dump const& w, bool coroutine) {
    if (w.object == 0 || w.kind == wait_kind::none || w.kind == wait_kind::join ||
        w.kind == wait_kind::select) {
      return;
    }
    auto it = d.waiters.begin();
    while (it != d.waiters.end() && (it->object != w.object || it->kind != w.kind)) {
      ++it;
    }
    if (it == d.waiters.end()) {
      d.waiters.push_back({w.object, w.kind, 0, 0});
      it = d.waiters.end() - 1;
    }
    ++(coroutine ? it->coroutines : it->threads);
  };
  for (worker_dump const& wd : d.workers) {
    for (task_frame const& f : wd.stack) {
      count(f.waits_for, false);
    }
  }
  for (coroutine_dump const& c : d.listed_coroutines) {
    if (c.state == coroutine_state::suspended) {
      count(c.wait, true);
    }
  }
}

inline auto hex_address(std::uintptr_t a) -> std::string {
  char buf[2 + 2 * sizeof(std::uintptr_t) + 1];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(a));
  return buf;
}

/// A wait as text: `recv on 0x...`, `select of 3 cases (first on 0x...)`, `join of "parse" #3`.
inline auto wait_text(wait_dump const& w) -> std::string {
  std::string out = to_string(w.kind);
  switch (w.kind) {
    case wait_kind::join:
      if (w.task_id != 0) {
        out += " of \"" + w.task_name + "\" #" + std::to_string(w.task_id);
      } else {
        out += " of task " + hex_address(w.object);
      }
      break;
    case wait_kind::select:
      out += " of " + std::to_string(w.cases) + " cases";
      if (w.object != 0) {
        out += " (first on " + hex_address(w.object) + ")";
      }
      break;
    case wait_kind::when_all:
    case wait_kind::when_any:
      out += " of " + std::to_string(w.cases) + " tasks";
      break;
    default:
      if (w.object != 0) {
        out += " on " + hex_address(w.object);
      }
  }
  return out;
}

inline void append_wait_json(std::string& out, wait_dump const& w) {
  out += "{\"kind\":\"";
  out += to_string(w.kind);
  out += "\",\"object\":\"" + hex_address(w.object) + "\",\"cases\":" + std::to_string(w.cases) +
         ",\"task_name\":";
  if (w.task_id == 0) {
    out += "null";
  } else {
    append_json_string(out, w.task_name);
  }
  out += ",\"task_id\":" + std::to_string(w.task_id) + "}";
}

}  // namespace detail

/// The dump as text, one line per executor, per worker, per listed coroutine and per object
/// with waiters, e.g.
///   spindle executor 1: 2 workers, 0 queued in the injector, 2 coroutines bound
///     worker 0: waiting, deque 0, tasks run 3, stack: "outer" #1 (join of "inner" #2)
///     worker 1: running, deque 0, tasks run 1, stack: "inner" #2
///     coroutine "reader" #3: suspended, recv on 0x5581e4c0
///     coroutine "writer" #4: suspended, join of "reader" #3
///     waiting in recv on 0x5581e4c0: 1 coroutine, 0 threads
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
        if (f.waits_for.kind != wait_kind::none) {
          out += " (" + detail::wait_text(f.waits_for) + ")";
        }
      }
    }
    out += '\n';
  }
  for (auto const& c : d.listed_coroutines) {
    out += "  coroutine ";
    if (!c.name.empty()) {
      out += '"' + c.name + "\" ";
    }
    out += '#' + std::to_string(c.id) + ": " + to_string(c.state);
    if (c.state == coroutine_state::suspended) {
      out += ", " + detail::wait_text(c.wait);
    }
    out += '\n';
  }
  for (auto const& w : d.waiters) {
    out += "  waiting in " + std::string(to_string(w.kind)) + " on " +
           detail::hex_address(w.object) + ": " + std::to_string(w.coroutines) +
           (w.coroutines == 1 ? " coroutine, " : " coroutines, ") + std::to_string(w.threads) +
           (w.threads == 1 ? " thread\n" : " threads\n");
  }
  return out;
}

/// The dump as one JSON object:
///   {"executor":1,"worker_count":2,"injector_depth":0,"coroutines":0,"stopping":false,
///    "workers":[{"index":0,"guest":false,"state":"waiting","isolation_region":0,
///                "deque_depth":0,"tasks_run":3,"stack":[{"name":"outer","id":1,
///                "waits_for":{"kind":"none","object":"0x0","cases":0,"task_name":null,
///                "task_id":0},"key":"0x5581e000"}]}, ...],
///    "listed_coroutines":[{"name":"reader","id":3,"state":"suspended",
///                "wait":{"kind":"recv","object":"0x5581e4c0",...},"key":"0x5581e100"}, ...],
///    "waiters":[{"object":"0x5581e4c0","kind":"recv","coroutines":1,"threads":0}, ...]}
/// An unnamed task on a stack is {"name":null,"id":0,...}, an unnamed coroutine
/// {"name":null,...}. Addresses are strings (JSON numbers lose precision past 2^53).
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
      out += ",\"id\":" + std::to_string(f.id) + ",\"waits_for\":";
      detail::append_wait_json(out, f.waits_for);
      out += ",\"key\":\"" + detail::hex_address(f.key) + "\"}";
    }
    out += "]}";
  }
  out += "],\"listed_coroutines\":[";
  first = true;
  for (auto const& c : d.listed_coroutines) {
    out += first ? "{\"name\":" : ",{\"name\":";
    first = false;
    if (c.name.empty()) {
      out += "null";
    } else {
      detail::append_json_string(out, c.name);
    }
    out +=
        ",\"id\":" + std::to_string(c.id) + ",\"state\":\"" + to_string(c.state) + "\",\"wait\":";
    detail::append_wait_json(out, c.wait);
    out += ",\"key\":\"" + detail::hex_address(c.key) + "\"}";
  }
  out += "],\"waiters\":[";
  first = true;
  for (auto const& w : d.waiters) {
    out += first ? "{\"object\":\"" : ",{\"object\":\"";
    first = false;
    out += detail::hex_address(w.object) + "\",\"kind\":\"" + to_string(w.kind) +
           "\",\"coroutines\":" + std::to_string(w.coroutines) +
           ",\"threads\":" + std::to_string(w.threads) + "}";
  }
  out += "]}";
  return out;
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE
