// SPDX-License-Identifier: BSL-1.0
#pragma once
// The model checker's vocabulary: how to explore (options, with the random_schedules(),
// pct_schedules() and exhaustive() presets), what can go wrong (failure_kind) and what
// explore() reports back (report).
//
// Part of the model checker; include <spindle/model/scheduler.hpp> (or
// <spindle/model/atomic.hpp>), which describes the checker as a whole. Plain value types:
// no shared state, no synchronisation; an options value is read, never written, by the
// executions it configures. Each option's effect and the strategies' sources (PCT: Burckhardt
// et al., ASPLOS 2010; bounded preemption: Musuvathi & Qadeer, PLDI 2007) are described in
// scheduler.hpp and strategies.hpp.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace spindle::model {

/// Threads per execution, the body included. A program may raise it for all of its
/// translation units at once (-DSPINDLE_MODEL_MAX_THREADS=40, as the coherence meter's driver
/// does for 32 model threads); the vector clocks and thread tables grow with it. At most 64.
#ifndef SPINDLE_MODEL_MAX_THREADS
#define SPINDLE_MODEL_MAX_THREADS 8
#endif
inline constexpr std::size_t max_threads = SPINDLE_MODEL_MAX_THREADS;
static_assert(max_threads >= 2 && max_threads <= 64, "SPINDLE_MODEL_MAX_THREADS: 2 to 64");

class coherence_meter;

enum class strategy : std::uint8_t { random, pct, dfs, replay, bytes };

enum class failure_kind : std::uint8_t { none, assertion, data_race, deadlock, livelock, misuse };

inline auto to_string(failure_kind k) noexcept -> char const* {
  // In the order of the enumerators.
  constexpr std::array<char const*, 6> names{"none",     "assertion failed", "data race",
                                             "deadlock", "livelock",         "misuse"};
  auto const i = static_cast<std::size_t>(k);
  return i < names.size() ? names[i] : "?";
}

struct options {
  strategy kind = strategy::random;
  std::uint64_t seed = 1;
  /// Executions to run (dfs stops earlier once every schedule within the bound is done).
  std::uint64_t executions = 1000;
  std::uint32_t pct_depth = 3;
  std::uint32_t preemption_bound = 2;
  std::uint64_t max_steps = 100000;
  std::uint64_t spin_limit = 20000;
  /// x86-TSO store buffers: a store that is not seq_cst waits in its thread's FIFO buffer and
  /// reaches memory when the scheduler chooses to flush it (or at the thread's next
  /// read-modify-write, seq_cst store, fence or futex call); the thread itself reads its own
  /// buffered stores. Catches a missing store->load fence (Dekker, Chase-Lev pop).
  bool store_buffering = false;
  /// The C++ memory model's weak behaviours (C11 mode, scheduler.hpp "Memory models"): a
  /// load may read any store to its object that coherence, happens-before and the seq_cst
  /// rules allow, not only the latest, among the last `weak_history` stores to that object;
  /// which one is a scheduling choice. Not together with store_buffering, which it subsumes.
  bool weak_memory = false;
  /// Stores kept per atomic object in weak_memory mode (the oldest are forgotten), at least 1.
  std::uint32_t weak_history = 4;
  /// Timed waits each thread may see time out by the scheduler's choice while another thread
  /// can still run; beyond that a timed wait ends early only when nothing else can run (time
  /// passes for everyone: an unfair schedule would otherwise time a thread out forever while
  /// starving the thread it waits for).
  std::uint32_t max_timeouts = 2;
  std::vector<int> schedule;        // strategy::replay
  std::vector<std::uint8_t> bytes;  // strategy::bytes
  bool quiet = false;               // do not print the failure (tests that expect one)
  bool use_environment = true;      // honour SPINDLE_MODEL_REPLAY and SPINDLE_MODEL_SEED
  /// When set, every instrumented operation of every execution is reported to it, which
  /// counts the cache-line traffic it would cost (coherence.hpp). Not owned; must outlive
  /// explore(). Null: nothing is counted.
  coherence_meter* meter = nullptr;
};

/// `executions` random schedules, seeded from `seed`.
inline auto random_schedules(std::uint64_t seed, std::uint64_t executions) -> options {
  options o;
  o.kind = strategy::random;
  o.seed = seed;
  o.executions = executions;
  return o;
}

/// `executions` PCT schedules with `depth` (bug depth d: d-1 priority change points).
inline auto pct_schedules(std::uint64_t seed, std::uint64_t executions, std::uint32_t depth)
    -> options {
  options o;
  o.kind = strategy::pct;
  o.seed = seed;
  o.executions = executions;
  o.pct_depth = depth;
  return o;
}

/// Every schedule with at most `preemption_bound` preemptions, up to `max_executions`.
inline auto exhaustive(std::uint32_t preemption_bound, std::uint64_t max_executions) -> options {
  options o;
  o.kind = strategy::dfs;
  o.preemption_bound = preemption_bound;
  o.executions = max_executions;
  return o;
}

/// The outcome of explore(). Converts to true when nothing failed.
struct report {
  failure_kind failure = failure_kind::none;
  std::string message;   // what failed, the state of the threads and the last events
  std::string schedule;  // the failing choice sequence, for SPINDLE_MODEL_REPLAY
  std::uint64_t seed = 0;
  std::uint64_t executions = 0;
  std::uint64_t max_choices = 0;  // the longest choice sequence seen
  bool exhausted = false;         // dfs: every schedule within the bound was run

  explicit operator bool() const noexcept { return failure == failure_kind::none; }
};

}  // namespace spindle::model
