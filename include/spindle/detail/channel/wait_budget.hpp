// SPDX-License-Identifier: BSL-1.0
#pragma once
// How long a blocked channel operation keeps trying before it parks, and how: `wait_budget`.
// Whether a waiting receiver polls at all is decided by channel_state::receiver_may_poll, from
// the channel's handle counts and detail::available_cpus().

#include <spindle/detail/channel/tuning.hpp>
#include <spindle/detail/channel/wait_options.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>

#include <chrono>
#include <cstddef>
#include <thread>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// How long a blocked channel operation keeps trying before it parks, and how.
///
/// Parking is cheap to enter and dear to leave: a futex wake-up costs both sides far more than
/// a message's round trip, so a wait that parks a few microseconds too early multiplies that
/// round trip, and a partner that parked too early makes the other side park too (it waits
/// longer than its spin budget for the reply), so that both stay slow (measurements:
/// docs/performance.md, Channels). So a waiter keeps trying for longer than a wake-up takes:
///
///   (1) polls: up to `polls` tries one pause apart (a few microseconds; a PAUSE lasts longer
///       on recent Intel cores than on the machine the count was chosen on; only a sole
///       receiver of a bounded channel polls, channel_state). A message already in
///       flight from a running thread lands within a cache-line transfer, and a constant short
///       interval sees it at once where an exponential backoff would pause through it. The
///       caller may poll a cheap hint here instead of the full operation (recv_blocking).
///   (2) yields: tries with a yield in between, until `window` has passed since the wait began
///       (or the deadline, if sooner). A yield lets a preempted partner or any other runnable
///       thread have the core; when nothing else is runnable it returns at once, so this
///       phase is a slow poll that costs one system call a round.
///   (3) park (the caller: park_on).
/// Phases (1) and (2) are bounded, so a thread blocked on an idle channel burns about `window`
/// of CPU and then none. Under the model checker each phase is a single step.
class wait_budget {
 public:
  // The lengths come from detail/channel/tuning.hpp, where a measuring build may change them.
#if defined(SPINDLE_MODEL_CHECK)
  static constexpr int default_polls = 1;
  static constexpr int send_polls = 0;
#else
  static constexpr int default_polls = channel_tuning::polls;
  /// Phase (1) of a sender that found the channel full (see array_channel::send).
  static constexpr int send_polls = channel_tuning::send_polls;
#endif
  static constexpr std::chrono::microseconds window = channel_tuning::yield_window;
  static constexpr int full_every = channel_tuning::full_every;

  /// `polls`: the length of phase (1). `full_offset`: which round of each `full_every` rounds
  /// after phase (1) makes the full attempt (0: the first one).
  explicit wait_budget(wait_options const& options, int polls = default_polls,
                       int full_offset = 0) noexcept
      : options_(&options), polls_(polls), full_offset_(full_offset) {}

  /// Whether the caller should make its full attempt now rather than the cheaper poll form:
  /// once every `full_every` rounds after phase (1), so that what only the full attempt
  /// detects (a closed and drained channel, for a receiver) is seen within a few rounds, while
  /// most rounds leave the other side's lines alone.
  [[nodiscard]] auto full_attempt_due() const noexcept -> bool {
    return round_ >= polls_ && (round_ - polls_) % full_every == full_offset_;
  }

  /// Call after an attempt failed: waits before the next one and returns true, or returns
  /// false when the caller should stop trying and park (budget spent, deadline passed, or stop
  /// requested).
  auto keep_trying() noexcept -> bool {
    if (round_ < polls_) {
      if constexpr (channel_tuning::exponential) {
        // 2^round pauses, at most 64: a later try waits longer, as crossbeam's snooze does.
        for (int i = 0, n = 1 << (round_ < 6 ? round_ : 6); i < n; ++i) {
          spin_pause();
        }
      } else {
        spin_pause();
      }
      ++round_;
      return true;
    }
    if (options_->stop_requested()) {
      return false;
    }
#if defined(SPINDLE_MODEL_CHECK)
    if (round_ > polls_) {
      return false;
    }
#else
    auto const now = std::chrono::steady_clock::now();
    if (round_ == polls_) {
      give_up_ = now + window;
      if (options_->deadline && *options_->deadline < give_up_) {
        give_up_ = *options_->deadline;
      }
    }
    if (now >= give_up_) {
      return false;
    }
#endif
    ++round_;
    thread_yield();
    return true;
  }

 private:
  wait_options const* options_;
  int polls_;
  int full_offset_;
  int round_ = 0;
#if !defined(SPINDLE_MODEL_CHECK)
  steady_time give_up_{};
#endif
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
