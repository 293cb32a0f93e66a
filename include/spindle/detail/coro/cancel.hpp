// SPDX-License-Identifier: BSL-1.0
#pragma once
// Cancellation that reaches a suspended coroutine: the slot every spawned coroutine (and every
// child of when_all, when_any and timeout) owns, and the hook a spindle awaitable arms in it
// while the coroutine is suspended there.
//
// A coroutine chain (a spawned coroutine and the tasks it awaits, one inside the other) is
// suspended in at most one awaitable at a time, so one slot per chain holds at most one hook.
// The tasks of a chain share their root's slot: a task awaited by another inherits it, as it
// inherits the target it runs on (resume.hpp). `join_handle::cancel()` requests cancellation on
// the slot; the awaitable the coroutine is suspended in, or the next one that would suspend,
// then ends by throwing spindle::task_cancelled (as stdexec's stop requests end a sender with
// set_stopped, and folly::coro's awaitables throw OperationCancelled). A coroutine that catches
// it may go on; its later waits end the same way at once.
//
// State: one word, `word_` = hook pointer | bits.
//   - arm(h) (the suspended coroutine's awaitable): CAS 0 -> h. Refused when cancellation was
//     requested already (the awaitable then does not wait), and not needed once the slot is
//     closed (nothing can request any more: one load, no RMW).
//   - request() (any thread): sets `requested`. If a hook is armed, the same CAS removes it and
//     sets `busy`; the requester runs the hook (which aborts the wait: one try_select on the
//     awaitable's waiter, as a deadline does) and then clears `busy`.
//   - disarm(h) (the awaitable, when its wait has ended for any reason): CAS h -> 0; if that
//     fails a requester took the hook, and disarm waits until `busy` is clear, so the hook never
//     runs on an awaitable that has already returned to the coroutine.
//   - close() (the coroutine ended, or the only party that could cancel it, its join_handle, is
//     blocked in join()): later requests report that they came too late, and later waits do
//     not arm. A hook armed when the slot closes is disarmed as usual.
// Each of request, arm and disarm is one CAS on the word when nobody races, so a suspension
// costs two uncontended RMWs on a line only the coroutine's chain touches; none once the slot
// is closed, which is the common case of a coroutine spawned and then joined.
//
// Happens-before: arm's release publishes the hook to the requester's acquire; the requester's
// release when it clears `busy` pairs with disarm's acquire, so what the hook did is visible
// to the coroutine before it continues. Model tests: tests/model/cancel_test.cpp.
//
// The slot also passes on the coroutine's diagnostics notes (note()): what it waits on while
// suspended, for spindle::dump(); stored only for a coroutine its executor lists, in its
// record (detail/coro/coro_registry.hpp).

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/wait_note.hpp>

#include <coroutine>
#include <cstdint>
#include <type_traits>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// Where a listed coroutine's diagnostics note lives (the first part of its record,
/// detail/coro/coro_registry.hpp): what it is suspended on, for spindle::dump().
struct coro_note {
  atomic<std::uint64_t> word{0};
};

/// What an awaitable arms while its coroutine is suspended in it: run once by the requester.
/// An awaitable derives from it (or holds a cancel_link) and finds itself from the pointer, so
/// the hook costs a suspended coroutine's frame one word.
struct cancel_hook {
  void (*fire)(cancel_hook* self) noexcept = nullptr;
};

class cancel_slot {
 public:
  cancel_slot() noexcept = default;
  cancel_slot(cancel_slot const&) = delete;
  auto operator=(cancel_slot const&) -> cancel_slot& = delete;

  /// Requests cancellation. True when this call was the first request and the coroutine had
  /// not ended (close()); a hook armed now has run when it returns.
  auto request() noexcept -> bool {
    // acquire: pairs with arm()'s release; the hook read below is the armed one.
    std::uintptr_t w = word_.load(std::memory_order_acquire);
    for (;;) {
      if ((w & (requested_bit | closed_bit)) != 0) {
        return false;
      }
      std::uintptr_t const hook = w & ~bits;
      std::uintptr_t const next = hook == 0 ? requested_bit : (requested_bit | busy_bit);
      // acq_rel: acquire as above; release publishes `requested` to requested() and arm().
      if (word_.compare_exchange_weak(w, next, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        if (hook != 0) {
          auto* const h = reinterpret_cast<cancel_hook*>(hook);
          h->fire(h);
          // release: pairs with disarm()'s acquire load; the hook's work happens before the
          // awaitable returns to its coroutine.
          word_.fetch_and(~busy_bit, std::memory_order_release);
        }
        return true;
      }
    }
  }

  /// Whether cancellation was requested.
  [[nodiscard]] auto requested() const noexcept -> bool {
    // acquire: pairs with request()'s release.
    return (word_.load(std::memory_order_acquire) & requested_bit) != 0;
  }

  enum class arm_result : unsigned char {
    armed,      ///< disarm(h) when the wait ends
    cancelled,  ///< cancellation was requested: do not wait
    unneeded    ///< the slot is closed: no request can come, nothing armed
  };

  /// Arms `h` while the coroutine waits.
  [[nodiscard]] auto arm(cancel_hook* h) noexcept -> arm_result {
    // acquire: the requested bit, and whatever the requester did before, is seen.
    std::uintptr_t w = word_.load(std::memory_order_acquire);
    for (;;) {
      if ((w & requested_bit) != 0) {
        return arm_result::cancelled;
      }
      if ((w & closed_bit) != 0) {
        return arm_result::unneeded;
      }
      SPINDLE_ASSERT((w & ~bits) == 0, "two awaitables armed in one cancellation slot");
      // release: publishes the hook to request()'s acquire. acquire on failure: as above.
      if (word_.compare_exchange_weak(w, w | reinterpret_cast<std::uintptr_t>(h),
                                      std::memory_order_acq_rel, std::memory_order_acquire)) {
        return arm_result::armed;
      }
    }
  }

  /// Ends an arm(h) that returned `armed`. Returns true when a request took the hook (it has
  /// run by then).
  auto disarm(cancel_hook* h) noexcept -> bool {
    auto const mine = reinterpret_cast<std::uintptr_t>(h);
    // relaxed: a guess the CAS checks.
    std::uintptr_t w = word_.load(std::memory_order_relaxed);
    while ((w & ~bits) == mine) {
      // Keeps `closed` if it came meanwhile. release on success: nothing to publish, but the
      // word must not be reordered before the wait's last use of the hook; acquire on failure:
      // see below.
      if (word_.compare_exchange_weak(w, w & bits, std::memory_order_release,
                                      std::memory_order_acquire)) {
        return false;
      }
    }
    // A requester took the hook; wait until it has finished running it (a few instructions:
    // a try_select and a wake).
    // acquire: pairs with the requester's release when it clears `busy`.
    while ((word_.load(std::memory_order_acquire) & busy_bit) != 0) {
      thread_yield();
    }
    return true;
  }

  /// No request can come any more (the coroutine ended, or its handle is blocked in join()):
  /// later requests return false and later waits do not arm.
  void close() noexcept {
    // release: orders the coroutine's end before a requester that sees `closed`.
    word_.fetch_or(closed_bit, std::memory_order_release);
  }

  /// Diagnostics (spindle::dump): the slot of a coroutine its executor lists keeps its notes
  /// in `to` (the coroutine's record, detail/coro/coro_registry.hpp), or no longer, with null.
  /// Called before the coroutine starts, and after it ended, by the party that owns the
  /// coroutine then (the start's hand-over orders the first before every note()).
  void list(coro_note* to) noexcept { note_ = to; }
  [[nodiscard]] auto listed() const noexcept -> bool { return note_ != nullptr; }
  /// The record the notes go to, or null.
  [[nodiscard]] auto listing() const noexcept -> coro_note* { return note_; }

  /// The awaitable a listed coroutine is suspended in notes what it waits on
  /// (detail/sync/wait_note.hpp), and notes 0 when the wait ends; unlisted, nothing is stored.
  SPINDLE_ALWAYS_INLINE void note(std::uint64_t word) noexcept {
    if (note_ != nullptr) {
      // relaxed: read only by dumps, which need this word's own coherence and nothing else.
      note_->word.store(word, std::memory_order_relaxed);
    }
  }

 private:
  static constexpr std::uintptr_t requested_bit = 1;
  static constexpr std::uintptr_t busy_bit = 2;
  static constexpr std::uintptr_t closed_bit = 4;
  static constexpr std::uintptr_t bits = 7;
  static_assert(alignof(cancel_hook) >= 8, "the low three bits of a hook's address are flags");

  atomic<std::uintptr_t> word_{0};
  // Where the diagnostics notes go, or null (unlisted; always under the model checker, which
  // keeps no list, so the notes add no scheduling point to a model test).
  coro_note* note_ = nullptr;
};

/// An awaitable's link to its coroutine's slot: arm on suspension, disarm when the wait ends.
/// A coroutine without a slot (not spindle's, or a root of sync_wait) is never cancelled.
/// `on_fire(context)` runs when a request takes the hook.
class cancel_link : private cancel_hook {
 public:
  cancel_link() noexcept = default;
  cancel_link(cancel_link const&) = delete;
  auto operator=(cancel_link const&) -> cancel_link& = delete;

  void bind(cancel_slot* slot, void (*on_fire)(void* context) noexcept, void* context) noexcept {
    slot_ = slot;
    on_fire_ = on_fire;
    context_ = context;
    cancel_hook::fire = &thunk;
  }
  /// Arms the hook; false when the coroutine was cancelled already (nothing armed).
  [[nodiscard]] auto arm() noexcept -> bool {
    if (slot_ == nullptr) {
      return true;
    }
    cancel_slot::arm_result const r = slot_->arm(this);
    armed_ = r == cancel_slot::arm_result::armed;
    return r != cancel_slot::arm_result::cancelled;
  }
  /// Ends the arm (waits for a hook that is running).
  void disarm() noexcept {
    if (armed_) {
      armed_ = false;
      static_cast<void>(slot_->disarm(this));
    }
  }
  /// Whether the coroutine was cancelled.
  [[nodiscard]] auto requested() const noexcept -> bool {
    return slot_ != nullptr && slot_->requested();
  }
  /// cancel_slot::note, for a coroutine that has a slot.
  void note(std::uint64_t word) noexcept {
    if (slot_ != nullptr) {
      slot_->note(word);
    }
  }

 private:
  static void thunk(cancel_hook* h) noexcept {
    auto* self = static_cast<cancel_link*>(h);
    self->on_fire_(self->context_);
  }

  cancel_slot* slot_ = nullptr;
  void (*on_fire_)(void*) noexcept = nullptr;
  void* context_ = nullptr;
  bool armed_ = false;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
