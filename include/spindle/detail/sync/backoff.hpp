// SPDX-License-Identifier: BSL-1.0
#pragma once
// Bounded exponential backoff: spin with a CPU pause, then yield, then tell the caller to park.
//
// Spinning only pays while the thread we wait for is running on another core. With more
// threads than cores it is pure loss, so the budget is small and bounded: at most 2^6 pauses a
// step, a few yields, then `is_completed()` says "park now". The limits follow crossbeam's
// Backoff (SPIN_LIMIT 6, YIELD_LIMIT 10), which was tuned after reports of spin collapse under
// oversubscription (crossbeam-rs/crossbeam#821).
//
// Thread safety: a backoff is a local variable of one thread; it shares nothing.

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>

#include <cstdint>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

class backoff {
 public:
  /// Steps of exponential spinning before `snooze` starts yielding.
  static constexpr std::uint32_t spin_limit = 6;
  /// Steps after which `is_completed` reports that the caller should park.
  static constexpr std::uint32_t yield_limit = 10;

  /// Busy-waits 2^min(step, spin_limit) pauses. For lock-free retry loops (a lost CAS), where
  /// the other thread is making progress and yielding would only add latency.
  void spin() noexcept {
    auto const rounds = std::uint32_t{1} << (step_ < spin_limit ? step_ : spin_limit);
    for (std::uint32_t i = 0; i < rounds; ++i) {
      spin_pause();
    }
    if (step_ <= spin_limit) {
      ++step_;
    }
  }

  /// Waits for another thread to make progress: pauses while the budget lasts, then yields the
  /// time slice so a preempted thread on this core can run.
  void snooze() noexcept {
    if (step_ <= spin_limit) {
      for (std::uint32_t i = 0, n = std::uint32_t{1} << step_; i < n; ++i) {
        spin_pause();
      }
    } else {
      thread_yield();
    }
    if (step_ <= yield_limit) {
      ++step_;
    }
  }

  /// True once spinning and yielding have run their course: block instead.
  [[nodiscard]] auto is_completed() const noexcept -> bool { return step_ > yield_limit; }

  void reset() noexcept { step_ = 0; }

 private:
  std::uint32_t step_ = 0;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
