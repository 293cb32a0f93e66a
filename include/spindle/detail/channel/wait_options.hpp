// SPDX-License-Identifier: BSL-1.0
#pragma once
// The options of one blocking channel call: what may end it besides success or close (a
// deadline, a stop request), and whether a blocked receive may poll before it yields.
// Deadlines are made by detail/sync/deadline.hpp.

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/wait_note.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <stop_token>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// A channel's counters of blocking (sender::stats(), receiver::stats()). Each is raised only
/// next to a sleep on the channel's wait lists (a futex wait, microseconds), never on a path
/// that completes without waiting, so they are always on.
struct channel_counters {
  atomic<std::uint64_t> blocked_sends{0};     // blocking sends that had to sleep at least once
  atomic<std::uint64_t> blocked_receives{0};  // likewise, receives
  atomic<std::uint64_t> waits{0};             // sleeps on the wait lists, all operations

  static void bump(atomic<std::uint64_t>& c) noexcept {
    // relaxed: a statistic; the sleep next to it costs far more than the line it touches.
    c.fetch_add(1, std::memory_order_relaxed);
  }
};

/// What may end a blocking call besides success or close, and how it waits.
struct wait_options {
  std::optional<steady_time> deadline;
  std::stop_token const* stop = nullptr;
  /// Whether a blocked receive polls before it yields (phase (1) of wait_budget), asked only
  /// once its first look found nothing; null means yes. channel_state::recv points it at
  /// receiver_may_poll(), and channel_state::send at users_fit_cores().
  bool (*may_spin)(void const* arg) noexcept = nullptr;
  void const* may_spin_arg = nullptr;

  [[nodiscard]] auto spin() const noexcept -> bool {
    return may_spin == nullptr || may_spin(may_spin_arg);
  }

  /// Set by park_on() when a park gave up at the deadline: the timed futex wait returns
  /// ETIMEDOUT only once the clock passed it, so the caller need not read the clock again.
  /// Under the model checker, whose timed waits end when the scheduler chooses (virtual
  /// time), this is what makes a channel's timeout observable at all.
  mutable bool deadline_passed = false;

  [[nodiscard]] auto expired() const noexcept -> bool {
    return deadline_passed || (deadline && std::chrono::steady_clock::now() >= *deadline);
  }
  [[nodiscard]] auto stop_requested() const noexcept -> bool {
    return stop != nullptr && stop->stop_requested();
  }

  /// The channel's counters (channel_state sets it for every blocking call it forwards).
  channel_counters* counters = nullptr;

  /// What the call waits on, for dumps (detail/sync/wait_note.hpp): channel_state sets the
  /// channel and the direction; the sync primitives set theirs; none: nothing is noted.
  wait_target what{wait_kind::none, nullptr};

  /// Called once per sleep on a wait list. `first` is the operation's own flag: the first
  /// sleep of an operation also counts it as blocked (a send when `is_send`).
  void note_wait(bool& first, bool is_send) const noexcept {
    if (counters == nullptr) {
      return;
    }
    if (!first) {
      first = true;
      channel_counters::bump(is_send ? counters->blocked_sends : counters->blocked_receives);
    }
    channel_counters::bump(counters->waits);
  }
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
