// SPDX-License-Identifier: BSL-1.0
#pragma once
// The select loop of a thread: complete exactly one of several channel operations, waiting on
// all of them at once.
//
// Algorithm: crossbeam-channel's `run_select` (crossbeam-rs/crossbeam:
// crossbeam-channel/src/select.rs) on spindle's wait list:
//   1. Try every channel case once without blocking, from a random start (select) or from the
//      first (select_biased); then, in order, the timeouts and stops (an expired deadline, a
//      requested stop). The first that completes is chosen. If none does and there is a
//      default case, it is chosen.
//   1a. A thread keeps trying for the wait budget of a blocked receive
//      (detail/channel/wait_budget.hpp: yields for up to ~100 us), since parking and being woken
//      costs more than a message's round trip. A coroutine goes on at once: it suspends, and
//      its worker runs other coroutines.
//   2. Otherwise make a fresh waiter, `watch` it on every case's channel side (one entry per
//      case, all owned by the one waiter), then re-check each case's readiness with seq_cst
//      loads: the Dekker pair with every waker's state change and is_empty load
//      (wait_list.hpp (A)/(B)), so a send or close that the re-check misses sees the entry. If a
//      case is ready, the select aborts its own waiter (one CAS; if another party won it first,
//      that party's wake is coming and is consumed as below).
//   3. Sleep until a party selects the waiter (through one of the entries: a sender, receiver
//      or close), the earliest timeout passes, or a stop case's token is requested.
//   4. Note which entry won, `unwatch` every case (entries a selector already unlinked stay
//      unlinked), and `accept` the winning case: a rendezvous case collects the value its
//      partner handed over; a buffered case tries again. If that fails (another receiver was
//      faster, or the wait ended by close, deadline or stop), go back to 1.
// Exactly one case completes: a case completes only inside its own try (one successful CAS on
// the channel) or through the single winning selection of the waiter. A withdrawn entry leaves
// no trace: unwatch unlinks it under the list's lock, after which no waker can reach the waiter.
//
// A wake-up that the select does not use is not lost: a buffered channel's notify selects one
// waiter among those still waiting (wait_queue::try_select skips a select that another channel
// has already selected), and the select, once selected through a channel, tries that channel
// first.
//
// Allocation: none; the waiter and the entries live in the select's frame and in its cases.

#include <spindle/detail/channel/wait_budget.hpp>
#include <spindle/detail/channel/wait_options.hpp>
#include <spindle/detail/select/cases.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/backoff.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/wait_list.hpp>
#include <spindle/detail/sync/wait_note.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// A case index that is none.
inline constexpr std::size_t no_case = static_cast<std::size_t>(-1);

/// A random start for a fair select (xorshift per thread). Under the model checker the start is
/// always 0, so that every execution replays the same way.
inline auto select_start(std::size_t n) noexcept -> std::size_t {
#if defined(SPINDLE_MODEL_CHECK)
  static_cast<void>(n);
  return 0;
#else
  thread_local std::uint32_t state =
      0x9e3779b9U ^ static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(&state));
  state ^= state << 13U;
  state ^= state >> 17U;
  state ^= state << 5U;
  return static_cast<std::size_t>(state % n);
#endif
}

/// The cases of one select, and what is known of them before the first round.
struct case_list {
  explicit case_list(std::span<select_case* const> c) noexcept : cases(c) {
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if (cases[i]->is_default()) {
        default_index = i;
      }
      if (auto const d = cases[i]->deadline()) {
        deadline = deadline ? std::min(*deadline, *d) : *d;
      }
    }
  }

  /// Step 1: the first case that completes without blocking, or no_case. Channel cases
  /// first, from a random start (or in order, biased); then, in order, a timeout that has
  /// expired or a stop that was requested (see select_case::is_channel).
  auto try_all(bool biased) -> std::size_t {
    std::size_t const n = cases.size();
    if (n == 0) {
      return no_case;
    }
    std::size_t const start = biased ? 0 : select_start(n);
    for (std::size_t k = 0; k < n; ++k) {
      std::size_t const i = start + k < n ? start + k : start + k - n;
      if (cases[i]->is_channel() && cases[i]->try_fire()) {
        return i;
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!cases[i]->is_channel() && cases[i]->try_fire()) {
        return i;
      }
    }
    return no_case;
  }

  /// Step 1 with the default case: the chosen case, or no_case when the select must wait.
  auto try_round(bool biased) -> std::size_t {
    auto const i = try_all(biased);
    return i != no_case ? i : default_index;
  }

  /// Step 2: watches every case with `w`; returns whether some case is already ready.
  auto watch_all(waiter& w) noexcept -> bool {
    for (auto* c : cases) {
      c->watch(w);
    }
    // Separately, after every registration: a case found ready must not stop the others'
    // registration, or a select that fails to abort (someone selected it) would miss entries
    // it must withdraw.
    return std::any_of(cases.begin(), cases.end(),
                       [&w](select_case const* c) { return c->ready(w); });
  }

  /// Step 4: the case whose entry won `selection` (no_case for aborted/closed), then unwatches
  /// every case.
  auto unwatch_all(std::uintptr_t selection) noexcept -> std::size_t {
    std::size_t winner = no_case;
    if (selection >= waiter::first_operation) {
      for (std::size_t i = 0; i < cases.size(); ++i) {
        if (cases[i]->owns(selection)) {
          winner = i;
        }
      }
    }
    for (auto* c : cases) {
      c->unwatch();
    }
    return winner;
  }

  std::span<select_case* const> cases;
  std::size_t default_index = no_case;
  std::optional<steady_time> deadline;
};

/// Runs a select on the calling thread: completes exactly one case, runs its handler, and
/// returns its index.
/// Throws: std::invalid_argument for a select with no case (it could never complete);
/// whatever the chosen handler throws (the select has completed and withdrawn everything).
inline auto run_select(std::span<select_case* const> cases, bool biased) -> std::size_t {
  case_list list(cases);
  if (cases.empty()) {
    throw std::invalid_argument("spindle::select needs at least one case");
  }
  backoff spin;
  wait_options options;
  options.deadline = list.deadline;
  for (;;) {
    if (auto const i = list.try_round(biased); i != no_case) {
      cases[i]->fire();
      return i;
    }
    // Keep trying for a while before registering and parking, as a blocked recv does
    // (wait_budget: a wake-up costs more than a message's round trip). Yields only, no polls:
    // the cases' senders may be the threads waiting for this core.
    for (wait_budget budget(options, 0); budget.keep_trying();) {
      if (auto const i = list.try_all(biased); i != no_case) {
        cases[i]->fire();
        return i;
      }
    }
    std::size_t winner = no_case;
    bool was_ready = false;
    {
      waiter self;
      was_ready = list.watch_all(self);
      std::uintptr_t selection = waiter::aborted;
      if (!was_ready || !self.try_select(waiter::aborted)) {
        case_summary const s = summarize(cases);
        blocking_note_scope const note(s.what, s.count);
        selection = self.wait(list.deadline);
      }
      winner = list.unwatch_all(selection);
    }
    if (winner != no_case && cases[winner]->accept()) {
      cases[winner]->fire();
      return winner;
    }
    if (was_ready) {
      // A case looked ready but its try failed: a peer is mid-transfer on that slot. Give it
      // the core rather than spin through register and withdraw.
      spin.snooze();
    }
  }
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
