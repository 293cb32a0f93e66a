#pragma once
// What spindle::executor::stats() reports: one `worker_stats` per worker thread. Included by
// <spindle/executor.hpp>.

#include <spindle/detail/sync/config.hpp>

#include <cstdint>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

/// Counters of one worker thread. Relaxed snapshots: exact once the executor is idle or shut
/// down.
struct worker_stats {
  std::uint64_t tasks_run = 0;       ///< tasks this worker ran
  std::uint64_t tasks_stolen = 0;    ///< tasks it took from other workers' deques
  std::uint64_t steal_attempts = 0;  ///< steals it tried, successful or not
  std::uint64_t times_parked = 0;    ///< times it went to sleep for lack of work
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE
