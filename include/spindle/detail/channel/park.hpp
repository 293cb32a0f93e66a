// SPDX-License-Identifier: BSL-1.0
#pragma once
// Parking a blocked channel operation: register on a wait list, re-check readiness, park
// until woken, closed, past the deadline or stopped, and unregister.
//
// The blocking protocol (crossbeam-channel src/flavors/array.rs `send`/`recv` and
// src/waker.rs): an operation first tries without blocking, polling and yielding for a bounded
// budget (detail/channel/wait_budget.hpp); then it registers a waiter on the side's wait list,
// re-checks readiness (the lost-wakeup guard: see detail/sync/wait_list.hpp for the seq_cst
// pairing), parks, and unregisters. A wake-up is a hint, not a hand-off: the woken party
// retries from the top. Every freed slot or sent message wakes one waiter; close wakes all.

#include <spindle/detail/channel/wait_options.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/wait_list.hpp>
#include <spindle/detail/sync/wait_note.hpp>

#include <cstdint>
#include <stop_token>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// Aborts a waiter when stop is requested (the callback of a std::stop_callback).
struct abort_on_stop {
  waiter* target;
  void operator()() const noexcept {
    if (target->try_select(waiter::aborted)) {
      target->wake();
    }
  }
};

/// Waits until `self` is selected, aborted (deadline, or stop through `options.stop`) or
/// closed, and returns the selection.
inline auto wait_for_selection(waiter& self, wait_options const& options) noexcept
    -> std::uintptr_t {
  blocking_note_scope const note(options.what);
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
///
/// `blocked` is the calling operation's flag for the channel's counters (note_wait): false
/// until its first sleep; `is_send` says which counter that first sleep raises.
template <class Ready>
void park_on(wait_list& list, Ready&& ready, wait_options const& options, bool& blocked,
             bool is_send) noexcept {
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
  options.note_wait(blocked, is_send);
  auto const selection = wait_for_selection(self, options);
  if (selection < waiter::first_operation) {
    // aborted or closed: nobody unlinked us on the way (a notifier unlinks what it selects).
    list.remove(entry);
    if (selection == waiter::aborted && options.deadline && !options.stop_requested()) {
      // Aborted by neither a stop request nor a ready re-check: the deadline passed.
      options.deadline_passed = true;
    }
  }
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
