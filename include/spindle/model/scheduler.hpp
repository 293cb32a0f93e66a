// SPDX-License-Identifier: BSL-1.0
#pragma once
// A deterministic scheduler for model-checking code built on spindle's atomic hooks.
//
// What it is. `explore(options, body)` runs `body` many times. In each run (an "execution")
// the body and the threads it starts with `model::thread` are real OS threads, but only one of
// them runs at a time: they hand a token to each other. Before every atomic operation, fence,
// futex call, spin step and thread start/join the running thread stops at a *scheduling point*
// and a strategy picks which thread runs next. Because the only source of nondeterminism is
// that choice, the sequence of choices identifies the execution, and replaying the sequence
// reproduces it exactly. This is the design of folly's DeterministicSchedule
// (folly/test/DeterministicSchedule.h), extended with a race detector, deadlock
// and livelock detection, x86-TSO store buffers and three exploration strategies.
//
// Strategies.
//   random      at each point a uniformly random enabled thread (one seed per execution);
//   pct         Probabilistic Concurrency Testing (Burckhardt, Kothari, Musuvathi, Nagarakatte,
//               "A Randomized Scheduler with Probabilistic Guarantees of Finding Bugs",
//               ASPLOS 2010): random thread priorities, highest enabled runs, and d-1 random
//               change points at which the running thread drops below every other;
//   dfs         every interleaving with at most `preemption_bound` preemptions (switching away
//               from a thread that could have continued), depth first (Musuvathi & Qadeer,
//               "Iterative Context Bounding for Systematic Testing of Multithreaded Programs",
//               PLDI 2007; loom's LOOM_MAX_PREEMPTIONS);
//   replay      one execution that follows a recorded choice sequence;
//   bytes       one execution whose choices come from a byte string (for fuzzers).
// A failing execution prints its choice sequence; SPINDLE_MODEL_REPLAY=<sequence> in the
// environment makes every explore() in the process replay it (select the test with
// --gtest_filter). SPINDLE_MODEL_SEED=<n> overrides the seed of random and pct runs.
//
// What it checks.
//   * `model::check(cond, what)` assertions inside the body and its threads;
//   * data races on plain (non-atomic) memory that the code marks with note_read/note_write:
//     each thread carries a vector clock; happens-before comes from the memory orders the code
//     declares (release/acquire/seq_cst accesses, seq_cst fences acting as acquire+release
//     fences, release sequences continued by read-modify-writes, thread start and join), as in
//     FastTrack (Flanagan & Freund, PLDI 2009). A missing release/acquire pair on a payload is
//     reported even though the execution itself ran on x86;
//   * deadlocks and lost wake-ups: no thread can run while some thread waits in futex_wait
//     (or join) -> failure with the state of every thread;
//   * liveness invariants (quiescence_invariant): properties that must hold whenever every
//     thread is blocked, i.e. nothing runs until a timeout or a wake-up;
//   * livelocks: a thread that spins (spin_pause/thread_yield) while no thread has written
//     anything since its last spin step is not scheduled while another thread can run; the
//     scheduler may instead let it "spin out" (run alone, without scheduling points, until a
//     write or 1024 steps), which is how a spin-then-park loop reaches its park. If only
//     spinners remain and they spin `spin_limit` steps without a write, or an execution
//     exceeds `max_steps` scheduling points, it fails as a livelock.
//
// Memory models. By default the scheduler is sequentially consistent: a load returns the
// latest store in the interleaving. With `options::store_buffering` it models x86-TSO (Owens,
// Sarkar, Sewell, "A Better x86 Memory Model: x86-TSO", TPHOLs 2009): a store that is not
// seq_cst waits in a per-thread FIFO buffer, the owning thread reads it from there, and it
// reaches memory when the scheduler picks that buffer (a choice like picking a thread) or at
// the thread's next read-modify-write, seq_cst store, fence, futex call, spawn, join or exit.
// That exposes a missing store->load fence (Dekker handshakes, Chase-Lev pop, park/notify).
// With `options::weak_memory` it models the C++ memory model's weak behaviours (the "C11
// mode", after CDSChecker: Norris & Demsky, OOPSLA 2013, and loom's bounded store history):
// every atomic object keeps its modification order (the last `weak_history` stores); a load
// may read any of them that coherence ([intro.races]/14-17), happens-before and the seq_cst
// rules allow, and which one is a scheduling choice (read_base candidates, counted as a
// preemption by dfs, uniform under random and pct); read-modify-writes read the newest;
// acquire and release build happens-before through the vector clocks as in the other modes,
// release sequences included; seq_cst operations and fences follow [atomics.order]/3-6 with
// S the order in which the schedule runs them. A spinning thread, and one back from a futex
// call, sees every store made so far (stores become visible in finite time,
// [atomics.order]/11), so that a spin loop cannot wait for ever on a value memory no longer
// holds. This shows what x86 never does: a relaxed or acquire load reading an older value
// (message passing without release/acquire, a steal reading a stale bottom without its
// fence, a waker missing a relaxed registration), IRIW, and load->load reordering.
//
// Limitations. In the SC and TSO modes, weaker outcomes (load->load or store->store
// reordering, as on arm64, or a relaxed load returning a value older than memory's) are never
// *executed*; the vector clocks report the missing synchronisation only where a payload access
// is marked (note_read/note_write). In the weak_memory mode a load never reads a store that
// the schedule has not run yet (no load->store reordering, no out-of-thin-air values), a
// failed compare-exchange reads the newest value, two seq_cst fences order their threads'
// accesses only through the rules above (not as a happens-before edge), and stores older than
// the history are never read. compare_exchange_weak never fails spuriously. Timed waits use virtual
// time: a thread in futex_wait_until may time out whenever the scheduler chooses it. Code under
// test must be deterministic given the schedule (no real clocks or randomness) and must start
// threads only through model::thread. Memory reuse: link <spindle/model/track_allocations.hpp> into
// the program so freed blocks are forgotten by the race detector.
//
// Library state and time. A process-wide service of the library (the timer of
// detail/coro/timer.hpp) cannot live across executions: each execution starts from scratch, and
// a failed one is abandoned with its threads. execution_local<T>() gives such a service one
// object per execution, destroyed on the body's thread when the body returns (so a service
// thread it started is stopped and joined inside the execution). Virtual time: model::now() is
// steady_clock::now() until the code lets time pass (let_time_pass, after a timed wait the
// scheduler ended), and then at least that instant, so a deadline that a timed-out wait stood
// for reads as passed; a deadline far away (an hour) never passes on the real clock during a
// test, so the outcome depends on the schedule only.
//
// Layout. This header is the checker's entry point (explore, check, thread, forget_memory) and
// includes its parts: options.hpp (options, presets, report), strategies.hpp (the choosers),
// race_detector.hpp (vector clocks and the payload race detector), threads.hpp (thread records,
// blocking states, the OS thread pool) and execution.hpp (one run: the token, the scheduling
// points, the checkers). coherence.hpp is the coherence cost meter (options::meter): it counts
// the cache-line transfers and invalidations an execution would cost on a many-core machine.
//
// Thread safety: explore() may be called from any thread, one call at a time per thread; the
// hooks in <spindle/model/atomic.hpp> may be called only by threads of a running execution
// (or, outside any execution, by a single thread: they then run as plain operations).

#include <spindle/model/execution.hpp>
#include <spindle/model/options.hpp>
#include <spindle/model/race_detector.hpp>
#include <spindle/model/strategies.hpp>
#include <spindle/model/threads.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace spindle::model {

namespace impl {

[[noreturn]] inline void outside_execution(char const* what) {
  std::fprintf(stderr, "spindle::model: %s called outside a model execution\n", what);
  std::abort();
}

}  // namespace impl

/// Runs `body` under the scheduler according to `opts` and reports the first failure.
///
/// The body runs as model thread 0 and may start threads with model::thread (it must join
/// them). It must build its own state on each call: every execution starts from scratch.
inline auto explore(options opts, std::function<void()> const& body) -> report {
  report r;
  if (opts.weak_memory && opts.store_buffering) {
    r.failure = failure_kind::misuse;
    r.message =
        "options: weak_memory and store_buffering exclude each other (weak_memory "
        "already allows every x86-TSO outcome the checker explores)\n";
    return r;
  }
  auto ch = impl::make_chooser(opts);
  for (std::uint64_t i = 0; i < opts.executions; ++i) {
    ch->begin(i);
    auto ex = std::make_unique<impl::execution>(opts, *ch);
    ex->start(body);
    ex->wait_done();
    ++r.executions;
    r.max_choices = std::max<std::uint64_t>(r.max_choices, ex->choices().size());
    if (ex->failed()) {
      r.failure = ex->failure();
      r.schedule = impl::format_schedule(ex->choices());
      r.seed = ch->seed();
      char head[160];
      std::snprintf(head, sizeof head, "execution %llu (strategy %s, seed %llu)\n",
                    static_cast<unsigned long long>(i), impl::strategy_name(opts.kind),
                    static_cast<unsigned long long>(r.seed));
      r.message = ex->message() + head + "replay: SPINDLE_MODEL_REPLAY=" + r.schedule + "\n";
      if (!opts.quiet) {
        std::fprintf(stderr, "spindle::model: %s", r.message.c_str());
      }
      // The abandoned threads still wait on this execution's mutex: it must outlive them.
      static_cast<void>(ex.release());
      return r;
    }
    ex->join_all();
    if (!ch->finish()) {
      r.exhausted = opts.kind == strategy::dfs;
      break;
    }
  }
  return r;
}

/// Fails the running execution with `what` unless `cond` holds. Outside an execution, aborts.
inline void check(bool cond, char const* what) {
  if (cond) {
    return;
  }
  if (auto* ex = impl::current_execution; ex != nullptr) {
    ex->fail(failure_kind::assertion, what);
  }
  std::fprintf(stderr, "spindle::model: check failed outside an execution: %s\n", what);
  std::abort();
}

/// A thread of the running execution. Must be joined before it is destroyed.
class thread {
 public:
  template <class Fn>
  explicit thread(Fn fn) {
    auto* ex = impl::current_execution;
    if (ex == nullptr) {
      impl::outside_execution("model::thread");
    }
    id_ = ex->spawn(impl::current_thread, std::function<void()>(std::move(fn)));
  }
  thread(thread const&) = delete;
  auto operator=(thread const&) -> thread& = delete;
  ~thread() {
    if (!joined_) {
      check(false, "model::thread destroyed without join()");
    }
  }

  void join() {
    auto* ex = impl::current_execution;
    if (ex == nullptr) {
      impl::outside_execution("model::thread::join");
    }
    ex->join(impl::current_thread, id_);
    joined_ = true;
  }

 private:
  int id_ = -1;
  bool joined_ = false;
};

/// A liveness invariant checked at quiescent points. While the object lives (inside an
/// execution), `check` runs whenever every thread of the execution is blocked in a futex wait
/// (timed or not) or a join, or has finished, and no store buffer holds a store: the state a
/// real program stays in until a timeout or a wake-up that nobody owes it. A property such as
/// "no task is queued while a worker sleeps and nobody searches" must hold there; between two
/// steps of a protocol it may not, which is why it is not an assertion at every step. A
/// spinning thread is not quiescent (its next step may be the one that makes progress).
/// `check` reads the state as plain memory (the atomic hooks add no scheduling point inside
/// it), must not block, and returns nullptr when the invariant holds, or a description of what
/// is broken, which fails the execution as an assertion; with no timed wait left, the
/// checker would otherwise report the same state as a bare deadlock.
class quiescence_invariant {
 public:
  explicit quiescence_invariant(std::function<char const*()> check) {
    ex_ = impl::current_execution;
    if (ex_ == nullptr) {
      impl::outside_execution("model::quiescence_invariant");
    }
    key_ = ex_->add_invariant(std::move(check));
  }
  quiescence_invariant(quiescence_invariant const&) = delete;
  auto operator=(quiescence_invariant const&) -> quiescence_invariant& = delete;
  ~quiescence_invariant() { ex_->remove_invariant(key_); }

 private:
  impl::execution* ex_ = nullptr;
  std::uint64_t key_ = 0;
};

namespace impl {
/// One key per type for execution_local<T>.
template <class T>
inline char const local_key = 0;
}  // namespace impl

/// The running execution's object of type T, made by `make()` (which returns a T* from
/// `new`) the first time an execution asks; the execution deletes it on the body's thread once
/// the body has returned, inside the execution. For library services that are process-wide
/// outside the checker (see "Library state and time" above). Outside an execution, aborts.
template <class T, class Make>
auto execution_local(Make make) -> T& {
  auto* ex = impl::current_execution;
  if (ex == nullptr) {
    impl::outside_execution("model::execution_local");
  }
  if (void* p = ex->local(&impl::local_key<T>); p != nullptr) {
    return *static_cast<T*>(p);
  }
  T* const made = make();
  ex->add_local(&impl::local_key<T>, made, [](void* p) { delete static_cast<T*>(p); });
  return *made;
}

/// The running execution's object of type T if it made one (execution_local), else nullptr
/// (also outside an execution).
template <class T>
auto find_execution_local() noexcept -> T* {
  auto* ex = impl::current_execution;
  return ex == nullptr ? nullptr : static_cast<T*>(ex->local(&impl::local_key<T>));
}

/// The model's clock: steady_clock::now(), or the latest instant the running execution let
/// pass if that is later (virtual time; see above).
inline auto now() noexcept -> std::chrono::steady_clock::time_point {
  auto const real = std::chrono::steady_clock::now();
  auto* ex = impl::current_execution;
  return ex == nullptr ? real : std::max(real, ex->time_passed());
}

/// Virtual time: from now on model::now() reads at least `t` in the running execution (called
/// by code whose timed wait for `t` the scheduler ended). Outside an execution, does nothing.
inline void let_time_pass(std::chrono::steady_clock::time_point t) noexcept {
  if (auto* ex = impl::current_execution; ex != nullptr) {
    ex->let_time_pass(t);
  }
}

/// Drops the race detector's memory of [p, p + size): the storage was freed and may be reused.
/// <spindle/model/track_allocations.hpp> calls it from operator delete.
inline void forget_memory(void const* p, std::size_t size) noexcept {
  auto* ex = impl::current_execution;
  if (ex == nullptr || impl::forgetting || p == nullptr) {
    return;
  }
  impl::forgetting = true;
  ex->forget(p, size);
  impl::forgetting = false;
}

}  // namespace spindle::model
