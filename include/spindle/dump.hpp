// SPDX-License-Identifier: BSL-1.0
#pragma once
// spindle::dump: what every worker of an executor is doing, for a program that hangs.
//
//   std::fputs(spindle::dump(ex).c_str(), stderr);                      // one executor, text
//   auto json = spindle::dump_all(spindle::dump_format::json);          // every live executor
//
// For every worker (and every thread in a guest slot: a thread that is not a worker, inside a
// join, parallel_for or parallel_reduce on the executor): its state (searching, parked,
// running, waiting in a join, asleep in a join), the tasks nested on its stack with the names
// given at spawn (`ex.spawn(f, spindle::name("parse"))`), the isolation region of its wait
// (spindle/isolate.hpp) and the depth of its deque; for the executor: the tasks queued from
// outside and the coroutines bound to it. The types and their text and JSON forms are in
// spindle/diagnostics.hpp. Go's goroutine dump (SIGQUIT) and tokio's task dumps
// (tokio/src/runtime/dump.rs) serve the same need; executor_options::stall_report prints this
// dump by itself when an executor stalls.
//
// Waits: for every task on a worker's stack, the join it waits in (naming the task it waits for
// when that task is named or a listed coroutine) or the channel, select, lock, latch or
// barrier its thread is blocked on; for every listed coroutine (every named one, or all with
// executor_options::list_coroutines) whether it is queued, running or suspended, and what it
// is suspended on: a channel send or receive, a select (its case count and the first case's
// channel), a timer, a join handle, when_all/when_any, a lock, a latch or barrier, a notify,
// oneshot or watch, a broadcast; and for every object with waiters, how many listed coroutines
// and how many of the executor's threads wait there.
//
// What it does not show: unlisted coroutines (only their count); a thread outside the
// executor blocked on a channel; the cases of a select beyond the first; the children of
// when_all and when_any (the parent shows as waiting for them); an Asio operation or a foreign
// awaitable a coroutine waits in (shown as running); tasks of spawn_blocking (they run outside
// the workers).
//
// Thread safety: callable from any thread at any time, including a watchdog thread of the
// user's while every worker is stuck: it reads what the workers publish with relaxed loads and
// takes only the lock of the executor's list of coroutines, which a listed coroutine's spawn
// and end hold for a few instructions (dump_all() also takes the registry's lock, which only
// executors being made or destroyed take). Not async-signal-safe (it allocates):
// from a signal, wake a thread that calls it.
//
// Accuracy: each field is read once, while the executor runs; a stuck executor is shown
// exactly, a busy one as a blur of nearby moments. A named task's id may show next to the
// name of a task that ran just after it at the same depth (detail/executor/diag_state.hpp).
//
// Example: tests/dump_test.cpp (Example).

#include <spindle/detail/executor/diag.hpp>
#include <spindle/detail/executor/executor_core.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/diagnostics.hpp>
#include <spindle/executor.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

/// How dump() and dump_all() write their report.
enum class dump_format : std::uint8_t {
  text,  ///< one line per executor and per worker (to_text)
  json   ///< one JSON object per executor (to_json); dump_all: an array of them
};

/// A snapshot of `ex` as values.
/// Thread safety: any thread, any time. Throws: std::bad_alloc.
[[nodiscard]] inline auto snapshot(executor& ex) -> executor_dump {
  return detail::core_of(ex).snapshot();
}

/// What `ex`'s workers are doing, as text or JSON.
/// Thread safety: any thread, any time. Throws: std::bad_alloc.
[[nodiscard]] inline auto dump(executor& ex, dump_format format = dump_format::text)
    -> std::string {
  executor_dump const d = snapshot(ex);
  return format == dump_format::json ? to_json(d) : to_text(d);
}

/// dump() of every executor alive in the process, in the order they were made: the texts one
/// after the other, or a JSON array. A join that waits for a task of another executor names
/// it too. Empty (or `[]`) under the model checker, which keeps no
/// list.
/// Thread safety: any thread, any time. Throws: std::bad_alloc.
[[nodiscard]] inline auto dump_all(dump_format format = dump_format::text) -> std::string {
  std::vector<executor_dump> dumps;
#if !defined(SPINDLE_MODEL_CHECK)
  detail::registry().for_each(
      [&](detail::executor_core const& core) { dumps.push_back(core.snapshot()); });
#endif
  // A join on one executor may wait for a task of another.
  detail::name_joins(dumps);
  std::string out = format == dump_format::json ? "[" : "";
  bool first = true;
  for (executor_dump const& d : dumps) {
    if (format == dump_format::json) {
      out += first ? "" : ",";
      out += to_json(d);
    } else {
      out += to_text(d);
    }
    first = false;
  }
  if (format == dump_format::json) {
    out += "]";
  }
  return out;
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE
