// SPDX-License-Identifier: BSL-1.0
#pragma once
// The watchdog behind executor_options::stall_report: one thread that looks, every quarter of
// `after`, at how many tasks the executor has started, and reports once when that count stood
// still for `after` while work was pending (a task queued, or a thread inside a task). The
// executor (executor_core.hpp) answers the questions through stall_probe and makes the report
// itself (a dump, spindle/dump.hpp). Go's runtime reports a stuck program from a thread of its
// own the same way (its sysmon thread, runtime/proc.go, which also detects deadlock).
//
// Progress: the thread sleeps between looks (detail/sync/helper_thread.hpp); stop() wakes it and
// joins it, so stopping takes one wake-up, not a period.
//
// Synchronization: the probe's answers are relaxed snapshots (see executor_core::tasks_started()).

#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/helper_thread.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// What the watchdog asks of the executor it watches. Called on the watchdog's thread.
class stall_probe {
 public:
  stall_probe() = default;
  stall_probe(stall_probe const&) = delete;
  auto operator=(stall_probe const&) -> stall_probe& = delete;

  /// Tasks started so far (never decreasing).
  [[nodiscard]] virtual auto stall_tasks_started() const noexcept -> std::uint64_t = 0;
  /// Whether work is pending: a task queued, or a thread inside a task.
  [[nodiscard]] virtual auto stall_work_pending() const noexcept -> bool = 0;
  /// Reports a stall that has lasted `stalled` so far.
  virtual void stall_report(std::chrono::milliseconds stalled) noexcept = 0;

 protected:
  ~stall_probe() = default;
};

class stall_watchdog {
 public:
  /// Starts the thread, named `thread_name`, watching `probe` (which must outlive this).
  /// Throws: std::system_error if the thread cannot start.
  stall_watchdog(stall_probe& probe, std::chrono::milliseconds after, std::string thread_name)
      : probe_(probe), after_(after) {
    thread_.start(std::move(thread_name), [this] { watch(); });
  }
  stall_watchdog(stall_watchdog const&) = delete;
  auto operator=(stall_watchdog const&) -> stall_watchdog& = delete;
  ~stall_watchdog() { stop(); }

  /// Stops the thread and joins it; idempotent. Called by one thread at a time.
  void stop() noexcept { thread_.stop(); }

 private:
  void watch() noexcept {
    auto const period = std::max(after_ / 4, std::chrono::milliseconds(1));
    std::uint64_t last = probe_.stall_tasks_started();
    auto since = std::chrono::steady_clock::now();
    bool reported = false;
    for (;;) {
      thread_.sleep_for(period);
      if (thread_.stopping()) {
        return;
      }
      auto const now = std::chrono::steady_clock::now();
      std::uint64_t const started = probe_.stall_tasks_started();
      if (started != last || !probe_.stall_work_pending()) {
        last = started;
        since = now;
        reported = false;
        continue;
      }
      if (!reported && now - since >= after_) {
        reported = true;
        probe_.stall_report(std::chrono::duration_cast<std::chrono::milliseconds>(now - since));
      }
    }
  }

  stall_probe& probe_;
  std::chrono::milliseconds const after_;
  // Last: destroyed (stopped and joined) first.
  helper_thread thread_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
