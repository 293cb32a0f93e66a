#pragma once
// The options of one blocking channel call: what may end it besides success or close (a
// deadline, a stop request), and whether a blocked receive may poll before it yields.
// Deadlines are made by detail/sync/deadline.hpp.

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>

#include <chrono>
#include <optional>
#include <stop_token>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// What may end a blocking call besides success or close, and how it waits.
struct wait_options {
  std::optional<steady_time> deadline;
  std::stop_token const* stop = nullptr;
  /// Whether a blocked receive polls before it yields (phase (1) of wait_budget), asked only
  /// once its first look found nothing; null means yes. channel_state::recv points it at
  /// users_fit_cores().
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
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
