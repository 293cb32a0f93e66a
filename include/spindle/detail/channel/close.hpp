// SPDX-License-Identifier: BSL-1.0
#pragma once
// Closing a buffered flavour (array, list), the same way in both: one fetch_or of the mark bit
// in the senders' position, after which every sender's claim fails; and, once the last
// receiver is gone, receiving and destroying what is left at once (crossbeam PR #669).

#include <spindle/channel_result.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/wait_list.hpp>

#include <cstdint>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// Sets `mark` in `tail` (the senders' position) and wakes every waiter on `lists`; returns
/// true for the call that set it.
template <class... Lists>
auto close_by_mark(atomic<std::uint64_t>& tail, std::uint64_t mark, Lists&... lists) noexcept
    -> bool {
  // seq_cst: a state change paired with the wait lists' is_empty (wait_list.hpp (B)) like any
  // send; every later claim by a sender (a CAS on `tail`) fails and sees the mark.
  if ((tail.fetch_or(mark, std::memory_order_seq_cst) & mark) != 0) {
    return false;
  }
  (lists.close_all(), ...);
  return true;
}

/// Receives and destroys every value buffered in `flavour`.
///
/// Preconditions: no other thread receives from `flavour` (its last receiver is gone, or it
/// is being destroyed). Senders that claimed a position before the close are waited for by
/// the flavour's receive.
template <class Flavour>
void drain(Flavour& flavour) noexcept {
  while (flavour.try_recv().status == recv_status::received) {
  }
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
