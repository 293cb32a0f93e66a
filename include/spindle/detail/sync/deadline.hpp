// SPDX-License-Identifier: BSL-1.0
#pragma once
// Deadlines of every blocking call (the channels' send_for/recv_until, the parker's park_for): a
// timeout or a deadline on any clock, converted once, at the call, to a deadline on steady_clock
// (the futex's CLOCK_MONOTONIC). A clock helper of floor 1, below everything that waits.
//
// The conversions saturate rather than overflow, so that every value a caller can write means
// what it says:
//   - a deadline at or before now (time_point::min(), a zero or negative timeout, -inf) is an
//     immediate timeout: the call tries once and does not wait;
//   - a deadline past what steady_clock can represent (time_point::max() on any clock and
//     duration type, duration::max(), +inf) becomes steady_time::max(), which no wait reaches;
//   - NaN (a floating-point timeout or deadline) is an immediate timeout: it is not after now.
//     A NaN reaching a duration_cast to an integer representation would be undefined.
// steady_time::max() reaches the futex as an absolute CLOCK_MONOTONIC timespec of about 2^63
// ns, which Linux accepts and clamps to its own "never" (KTIME_MAX).

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>

#include <chrono>
#include <type_traits>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// Whether `d` lies within half the range of duration type `To` (always true for a
/// floating-point `To`; false for NaN): such a value converts to `To` without overflow, and
/// the difference of two such values does not overflow either. Judged in double seconds;
/// the half range dwarfs double's rounding error.
template <class To, class Rep, class Period>
auto fits_half_of(std::chrono::duration<Rep, Period> d) noexcept -> bool {
  if constexpr (std::chrono::treat_as_floating_point_v<typename To::rep>) {
    return true;
  } else {
    using seconds = std::chrono::duration<double>;
    double const half = std::chrono::duration_cast<seconds>(To::max()).count() / 2;
    double const s = std::chrono::duration_cast<seconds>(d).count();
    return s > -half && s < half;
  }
}

/// A timeout as a steady_clock deadline, saturating as the file comment says.
template <class Rep, class Period>
auto deadline_after(std::chrono::duration<Rep, Period> d) -> steady_time {
  auto const now = std::chrono::steady_clock::now();
  // Not `d <= 0`: this way NaN is an immediate timeout too.
  if (!(d > d.zero())) {
    return now;
  }
  using seconds = std::chrono::duration<double>;
  // A second of slack below the exact room: double's rounding (microseconds at this
  // magnitude) can then not let a d that does not fit through to the duration_cast below.
  double const room = std::chrono::duration_cast<seconds>(steady_time::max() - now).count() - 1.0;
  if (!(std::chrono::duration_cast<seconds>(d).count() < room)) {
    return steady_time::max();
  }
  return now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
}

/// Converts a deadline on any clock to a steady_clock deadline (for another clock, the time
/// left on it, re-based on steady_clock's now), saturating as the file comment says.
template <class Clock, class Duration>
auto to_steady(std::chrono::time_point<Clock, Duration> t) -> steady_time {
  using std::chrono::steady_clock;
  if constexpr (std::is_same_v<Clock, steady_clock>) {
    // Same clock: no re-basing, only the representation changes.
    if (fits_half_of<steady_clock::duration>(t.time_since_epoch())) {
      return std::chrono::time_point_cast<steady_clock::duration>(t);
    }
    // Too far from the epoch to represent (or NaN): the far future, or the past.
    using seconds = std::chrono::duration<double>;
    return std::chrono::duration_cast<seconds>(t.time_since_epoch()).count() > 0
               ? steady_time::max()
               : steady_clock::now();
  } else {
    using common = std::common_type_t<Duration, typename Clock::duration>;
    auto const now = Clock::now();
    if (fits_half_of<common>(t.time_since_epoch()) &&
        fits_half_of<common>(now.time_since_epoch())) {
      // Exact: both convert to `common` and their difference fits. Compared first so that an
      // unsigned representation never wraps.
      if (t <= now) {
        return steady_clock::now();
      }
      return deadline_after(t - now);
    }
    // At least one is too far from the epoch for `common`: the time left, in double seconds,
    // is precise enough for a deadline that far away (deadline_after saturates it).
    using seconds = std::chrono::duration<double>;
    return deadline_after(std::chrono::duration_cast<seconds>(t.time_since_epoch()) -
                          std::chrono::duration_cast<seconds>(now.time_since_epoch()));
  }
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
