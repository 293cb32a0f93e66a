// SPDX-License-Identifier: BSL-1.0
#pragma once
// What every buffered flavour (array, list, spsc; lanes through its array lanes) says the same
// way: whether a send or a receive would go ahead now (the re-check after registering on a wait
// list, select's ready()), and the no-lost-wake-up invariant that the model tests check at
// every quiescent point (tests/model/liveness_test.cpp). Each flavour supplies its own state
// (full, empty, closed, read with seq_cst loads: wait_list.hpp (A)); the rule is written once.

#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/wait_list.hpp>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// A send goes ahead (or fails at once) on a buffered flavour: a slot is free, or closed.
[[nodiscard]] constexpr auto send_would_proceed(bool full, bool closed) noexcept -> bool {
  return !full || closed;
}

/// A receive goes ahead (or fails at once) on a buffered flavour: a value is buffered, or
/// closed.
[[nodiscard]] constexpr auto recv_would_proceed(bool empty, bool closed) noexcept -> bool {
  return !empty || closed;
}

/// The no-lost-wake-up invariant of a buffered flavour: where every thread is quiescent,
/// nobody may still wait for a wake that the flavour's state already owes it. Returns what
/// breaks it, or nullptr. `recv_proceeds()` and `send_proceeds()` say whether a receive and a
/// send would go ahead now; they are called only when somebody waits on that side (so that a
/// check where nobody waits reads no state). `senders` is null for a flavour whose sends never
/// wait (the unbounded list). Meaningful only at quiescence: between two steps of a protocol
/// it may not hold.
template <class RecvProceeds, class SendProceeds>
[[nodiscard]] auto buffered_lost_wake_up(wait_list const& receivers, RecvProceeds recv_proceeds,
                                         wait_list const* senders,
                                         SendProceeds send_proceeds) noexcept -> char const* {
  if (receivers.waiting_at_quiescence() && recv_proceeds()) {
    return "a receiver waits while a value is buffered or the channel is closed";
  }
  if (senders != nullptr && senders->waiting_at_quiescence() && send_proceeds()) {
    return "a sender waits while a slot is free or the channel is closed";
  }
  return nullptr;
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
