// SPDX-License-Identifier: BSL-1.0
#pragma once
// The receive that every buffered flavour (array, list) shares: how a claim on a position
// ends (`claim`), the try_recv result it makes (`recv_outcome`), and the blocking receive
// (`recv_blocking`), which tries, waits as wait_budget says, and parks (park_on).

#include <spindle/channel_result.hpp>
#include <spindle/detail/channel/park.hpp>
#include <spindle/detail/channel/wait_budget.hpp>
#include <spindle/detail/channel/wait_options.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/wait_list.hpp>

#include <cstdint>
#include <optional>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

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

/// The waiting part of recv_blocking, after its first look found nothing.
template <class T, class PollRecv, class TryRecv, class Ready>
auto recv_waiting(PollRecv& poll_recv, TryRecv& try_recv, wait_list& list, Ready& ready,
                  wait_options const& options) noexcept -> recv_result<T> {
  bool const spin = options.spin();
  bool blocked = false;
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
    park_on(list, ready, options, blocked, /*is_send=*/false);
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
/// that cache line away from the sender, which then pays a coherence miss on its next send,
/// and in a ping-pong that miss lands on every message (measurements: docs/performance.md,
/// Channels). So the first look is the poll, and the full attempt runs once every
/// `full_every` rounds and always once before parking or giving up. A flavour without a
/// cheaper poll passes try_recv for both.
///
/// Phase (1), polling one pause apart, runs only when `options.spin()` says the channel's users
/// fit on the cores. When they do not (more producers and consumers than cores), the sender a
/// receiver waits for is usually waiting for a core, and polling keeps that core from it while
/// pulling the slot lines away from the senders that do run. Yielding from the first round
/// looks about once a microsecond, leaves the slot lines alone in between, and lets a runnable
/// sender have the core. Go's sync.Mutex follows the same rule before it spins (runtime
/// `sync_runtime_canSpin`: no spinning while other goroutines wait for the processor); here
/// the channel's handle count stands for the threads that want a core.
template <class T, class PollRecv, class TryRecv, class Ready>
auto recv_blocking(PollRecv&& poll_recv, TryRecv&& try_recv, wait_list& list, Ready&& ready,
                   wait_options const& options) noexcept -> recv_result<T> {
  // The waiting loop lives in its own function so that this first look inlines into the
  // caller: with the loop here, g++ called the whole function out of line and copied the
  // received value out of a stack temporary, which doubled the cost of a receive that finds
  // its value (measurements: docs/performance.md, Channels).
  if (auto r = poll_recv(); r.status != recv_status::empty) {
    return r;
  }
  return recv_waiting<T>(poll_recv, try_recv, list, ready, options);
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
