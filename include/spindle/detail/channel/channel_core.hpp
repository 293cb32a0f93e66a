#pragma once
// What every channel flavour shares: the options of a blocking call, deadlines on any clock,
// and the register / re-check / park / unregister step of the blocking protocol. The public
// result types are in <spindle/channel_result.hpp>.
//
// The blocking protocol (crossbeam-channel src/flavors/array.rs `send`/`recv` and
// src/waker.rs): an operation first tries without blocking, polling and yielding for a bounded
// budget (`wait_budget`, below); then it registers a waiter on the side's wait list, re-checks
// readiness (the lost-wakeup guard: see detail/sync/wait_list.hpp for the seq_cst pairing), parks,
// and unregisters. A wake-up is a hint, not a hand-off: the woken party retries from the top. Every
// freed slot or sent message wakes one waiter; close wakes all.

#include <spindle/channel_result.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/wait_list.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <thread>
#include <type_traits>

namespace spindle {

namespace detail {

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

  [[nodiscard]] auto expired() const noexcept -> bool {
    return deadline && std::chrono::steady_clock::now() >= *deadline;
  }
  [[nodiscard]] auto stop_requested() const noexcept -> bool {
    return stop != nullptr && stop->stop_requested();
  }
};

// Deadlines. Every blocking call measures its deadline on steady_clock (the futex's
// CLOCK_MONOTONIC), so a timeout or a deadline on another clock or duration type is converted
// once, at the call. The conversions saturate rather than overflow, so that every value a
// caller can write means what it says:
//   - a deadline at or before now (time_point::min(), a zero or negative timeout, -inf) is an
//     immediate timeout: the call tries once and does not wait;
//   - a deadline past what steady_clock can represent (time_point::max() on any clock and
//     duration type, duration::max(), +inf) becomes steady_time::max(), which no wait reaches;
//   - NaN (a floating-point timeout or deadline) is an immediate timeout: it is not after now.
//     A NaN reaching a duration_cast to an integer representation would be undefined.
// steady_time::max() reaches the futex as an absolute CLOCK_MONOTONIC timespec of about 2^63
// ns, which Linux accepts and clamps to its own "never" (KTIME_MAX).

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

/// A timeout as a steady_clock deadline, saturating as the comment above says.
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
/// left on it, re-based on steady_clock's now), saturating as the comment above says.
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

/// Aborts a waiter when stop is requested (the callback of a std::stop_callback).
struct abort_on_stop {
  waiter* target;
  void operator()() const noexcept {
    if (target->try_select(waiter::aborted)) {
      target->wake();
    }
  }
};

/// How an attempt to claim a position in the array or list flavour ended.
enum class claim : std::uint8_t { ok, unavailable, closed };

/// The try_recv result for a claim that ended as `c`; `read()` takes the claimed value.
template <class T, class Read>
auto recv_outcome(claim c, Read&& read) noexcept -> recv_result<T> {
  switch (c) {
    case claim::ok:
      return recv_result<T>{recv_status::received, read()};
    case claim::closed:
      return recv_result<T>{recv_status::closed, std::nullopt};
    case claim::unavailable:
      break;
  }
  return recv_result<T>{recv_status::empty, std::nullopt};
}

/// Waits until `self` is selected, aborted (deadline, or stop through `options.stop`) or
/// closed, and returns the selection.
inline auto wait_for_selection(waiter& self, wait_options const& options) noexcept
    -> std::uintptr_t {
  if (options.stop == nullptr) {
    return self.wait(options.deadline);
  }
  // May run abort_on_stop at once when stop was already requested. The callback's destructor
  // waits for a callback running on another thread, so the waiter outlives every access the
  // callback makes.
  std::stop_callback<abort_on_stop> on_stop(*options.stop, abort_on_stop{&self});
  return self.wait(options.deadline);
}

/// One round of blocking: registers the calling thread on `list`, re-checks `ready()` (which
/// must read the structure's state with seq_cst loads, see wait_list.hpp (A)/(B)), parks until
/// a waker, close, the deadline or stop ends the wait, and unregisters. The caller retries its
/// operation afterwards whatever happened.
template <class Ready>
void park_on(wait_list& list, Ready&& ready, wait_options const& options) noexcept {
  waiter self;
  wait_entry entry(self);
  list.push(entry);
  if (ready()) {
    if (self.try_select(waiter::aborted)) {
      list.remove(entry);
      return;
    }
    // A waker selected us in between; consume its wake below.
  }
  if (wait_for_selection(self, options) < waiter::first_operation) {
    // aborted or closed: nobody unlinked us on the way (a notifier unlinks what it selects).
    list.remove(entry);
  }
}

/// How long a blocked channel operation keeps trying before it parks, and how.
///
/// Parking is cheap to enter and dear to leave. Measured on the 2-core VM the benchmarks run
/// on, a futex wake of a thread whose core is idle costs the waker about 29 us (p50) and the
/// sleeper runs again about 57 us (p50) after it; a wait that parks a few microseconds too
/// early therefore costs the round trip of a message 30x. A partner that parked too early
/// makes the other side park too (it waits longer than its spin budget for the reply), and
/// both stay in that slow mode. So a waiter keeps trying for longer than a wake-up takes:
///
///   (1) polls: up to `polls` tries one pause apart (about 2 us in all). A message already in
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
#if defined(SPINDLE_MODEL_CHECK)
  static constexpr int default_polls = 1;
#else
  static constexpr int default_polls = 64;
#endif
  static constexpr std::chrono::microseconds window{100};
  static constexpr int full_every = 8;

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
      ++round_;
      spin_pause();
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

/// The waiting part of recv_blocking, after its first look found nothing.
template <class T, class PollRecv, class TryRecv, class Ready>
auto recv_waiting(PollRecv& poll_recv, TryRecv& try_recv, wait_list& list, Ready& ready,
                  wait_options const& options) noexcept -> recv_result<T> {
  bool const spin = options.spin();
  for (;;) {
    // No polls for a wait whose deadline has passed (recv_for(0)): it ends after one look.
    bool const poll_first = spin && !options.expired();
    wait_budget budget(options, poll_first ? wait_budget::default_polls : 0,
                       wait_budget::full_every - 1);
    while (budget.keep_trying()) {
      auto r = budget.full_attempt_due() ? try_recv() : poll_recv();
      if (r.status != recv_status::empty) {
        return r;
      }
    }
    if (auto r = try_recv(); r.status != recv_status::empty) {
      return r;
    }
    if (options.stop_requested()) {
      return recv_result<T>{recv_status::cancelled, std::nullopt};
    }
    if (options.expired()) {
      return recv_result<T>{recv_status::timed_out, std::nullopt};
    }
    park_on(list, ready, options);
  }
}

/// The blocking receive of every buffered flavour: tries until a value arrives or the channel
/// is closed and drained, waiting as `wait_budget` says, then parks on `list` until `ready()`
/// (not empty, or closed) and tries again.
///
/// Most rounds call `poll_recv()`, which takes a value that is ready and otherwise reports
/// `empty` at once, reading only the receivers' position and the slot a sender writes
/// last. The full `try_recv()` also tells "empty" from "closed" and from "a sender is mid-
/// write", which needs the senders' position: a receiver that reads it while it waits pulls
/// that cache line away from the sender, which then pays a coherence miss on its next send.
/// In a ping-pong that one miss per message made the round trip 2.5x slower
/// (tools/spindle-bench `channel --scenario pingpong`). So the first look is the poll, and
/// the full attempt runs once every `full_every` rounds and always once before parking or
/// giving up. A flavour without a cheaper poll passes try_recv for both.
///
/// Phase (1), polling one pause apart, runs only when `options.spin()` says the channel's users
/// fit on the cores. When they do not (4 producers and 2 consumers on 2 cores, the seed
/// scenario), the sender a receiver waits for is usually waiting for a core, and polling
/// keeps that core from it while pulling the slot lines away from the senders that do run:
/// with phase (1) always on, the consumers took 76% of the samples in `perf record` and the
/// scenario fell now and then into a mode at half its usual throughput. Yielding from the first
/// round looks about once a microsecond, leaves the slot lines alone in between, and lets a
/// runnable sender have the core. Go's sync.Mutex follows the same rule before it spins (runtime
/// `sync_runtime_canSpin`: no spinning while other goroutines wait for the processor); here
/// the channel's handle count stands for the threads that want a core.
template <class T, class PollRecv, class TryRecv, class Ready>
auto recv_blocking(PollRecv&& poll_recv, TryRecv&& try_recv, wait_list& list, Ready&& ready,
                   wait_options const& options) noexcept -> recv_result<T> {
  // The waiting loop lives in its own function so that this first look inlines into the
  // caller. With the loop here, g++ called the whole function out of line and copied the
  // received value out of a stack temporary: send + recv on one thread, a value always there,
  // took 31 ns a pair, against 15 ns this way and 15 ns for try_send + try_recv. In one
  // `spindle-bench channel` binary, the seed scenario went from 17.7 to 27.5 M msg/s.
  if (auto r = poll_recv(); r.status != recv_status::empty) {
    return r;
  }
  return recv_waiting<T>(poll_recv, try_recv, list, ready, options);
}

/// The number of processors this process may run on (at least 1), read once.
inline auto core_count() noexcept -> std::size_t {
  static std::size_t const cores = [] {
    auto const n = std::thread::hardware_concurrency();
    return n == 0 ? std::size_t{1} : static_cast<std::size_t>(n);
  }();
  return cores;
}

}  // namespace detail
}  // namespace spindle
