// SPDX-License-Identifier: BSL-1.0
#pragma once
// What spindle::executor::metrics() reports (`executor_metrics`), and what the deprecated
// executor::stats() reports (one `worker_stats` per worker thread: the first four counters of
// each `worker_metrics`, which has them all). Included by <spindle/executor.hpp>.

#include <spindle/detail/sync/config.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

/// Counters of one worker thread, as the deprecated executor::stats() reports them; each is
/// also in worker_metrics, under the same name. Relaxed snapshots: exact once the executor is
/// idle or shut down.
struct worker_stats {
  std::uint64_t tasks_run = 0;       ///< tasks this worker ran
  std::uint64_t tasks_stolen = 0;    ///< tasks it took from other workers' deques
  std::uint64_t steal_attempts = 0;  ///< steals it tried, successful or not
  std::uint64_t times_parked = 0;    ///< times it went to sleep for lack of work
};

/// One worker's part of executor::metrics(). The counters are the worker's own (no line
/// shared with another worker is written to keep them); the times come from two clock reads
/// per sleep, none per task.
struct worker_metrics {
  std::uint64_t tasks_run = 0;       ///< tasks this worker ran
  std::uint64_t tasks_stolen = 0;    ///< tasks it took from other workers' deques
  std::uint64_t steal_attempts = 0;  ///< steals it tried, successful or not
  std::uint64_t times_parked = 0;    ///< times it went to sleep for lack of work
  std::uint64_t times_woken = 0;     ///< times it came back from such a sleep
  /// Coroutine resumptions this worker queued for itself (a coroutine it woke) and then held
  /// while it kept running one task for about a millisecond or more, so that the executor
  /// moved them to the other workers. A count that grows says that tasks of this executor
  /// wake coroutines and then compute long, or block their thread by means spindle does not
  /// see (a std::mutex, a std::future, a system call): each such resumption waited a
  /// millisecond or two for a thread.
  std::uint64_t stuck_resumptions = 0;
  /// Time spent asleep for lack of work, the sleep in progress included.
  std::chrono::nanoseconds parked_time{0};
  /// Time awake since the executor started: running tasks, looking for them, or spinning
  /// before a sleep (exactly uptime - parked_time). Neither time ever decreases from one
  /// snapshot to a later one, and while the worker sleeps its busy time stands still.
  std::chrono::nanoseconds busy_time{0};
  /// Tasks in its deque now (approximate). Join jobs kept private (executor_options::
  /// private_joins) are not counted: no other worker could take them.
  std::size_t queue_depth = 0;
};

/// What executor::metrics() reports: a relaxed snapshot, exact once the executor is idle.
struct executor_metrics {
  std::vector<worker_metrics> workers;
  /// Tasks in the injector, not yet taken: submissions from outside the workers, and
  /// coroutine resumptions queued by threads outside them, which injector_capacity does not
  /// bound (so the depth may exceed it).
  std::size_t injector_depth = 0;
  std::size_t blocking_threads = 0;    ///< threads of the blocking pool alive now
  std::size_t blocking_idle = 0;       ///< of those, waiting for a task
  std::size_t blocking_queued = 0;     ///< spawn_blocking tasks waiting for a thread
  std::chrono::nanoseconds uptime{0};  ///< since the executor was made
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE
