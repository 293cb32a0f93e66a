// SPDX-License-Identifier: BSL-1.0
#pragma once
// The shared state of spindle::watch: the latest value under a lock, a version word, one wait
// list for the receivers' waits for a newer version (threads, coroutines and selects), and a
// count of the handles.
//
// Synchronization:
//   value_     guarded by mutex_: the sender replaces or modifies it, readers hold the lock for
//              as long as their guard (watch_ref) lives. So no reader ever sees a torn value.
//   version_   version << 1 | closed. The version moves on only under mutex_, after the value
//              changed, by a seq_cst fetch_add (the event's state change, wait_list.hpp (B));
//              `closed` is set once, by the sender's destruction (seq_cst fetch_or). Read
//              without the lock by changed() and has_changed().
//   handles_   receivers << 1 | sender: the last handle to go deletes the state.
//   holder_    the token of the thread whose guard holds mutex_ (0 when none): written under
//              mutex_ by that thread, read by a thread about to lock, which finds its own token
//              only when it would deadlock on itself.
// INVARIANT: a reader that read version v under the lock read the value of version v (the
// bump and the change it counts happen in one critical section).
//
// A receiver's wait (changed()) completes when the version differs from the one it saw last,
// or when `closed` is set and it saw the last version. It re-checks the word with a seq_cst
// load after registering; the sender bumps with a seq_cst RMW and then looks at the wait list
// (wake_all_waiting, detail/sync/event_case.hpp): a receiver whose look missed the bump is
// seen registered and woken, so no receiver sleeps past a newer version.
//
// Happens-before: the bump is a release (inside the seq_cst RMW), and a receiver's look at the
// version an acquire: whatever the sender did before send(v) is visible to a receiver that saw
// its version; the value itself is read under the lock.

#include <spindle/channel_result.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/event_case.hpp>
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/detail/sync/wait_list.hpp>

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// A token unique to the calling thread while it runs (the address of a thread_local; never 0).
/// A thread that reads a stale holder_ finds another thread's token, never its own: it wrote its
/// own token and then 0, and reads its own writes in order.
inline auto this_thread_token() noexcept -> std::uintptr_t {
#if defined(SPINDLE_MODEL_CHECK)
  // The model checker runs its threads on reused OS threads, so two model threads of one
  // execution may share a thread_local, and a model thread may read the stale token of the one
  // that ran on its OS thread before (the checker's threads do not synchronise as an exited and
  // a new OS thread do). The model thread's index plays the thread_local's part.
  return static_cast<std::uintptr_t>(::spindle::model::impl::current_thread) + 1U;
#else
  thread_local char token = 0;
  return reinterpret_cast<std::uintptr_t>(&token);
#endif
}

template <class T>
class watch_state {
 public:
  static constexpr std::uint64_t closed = 1;

  template <class... Args>
  explicit watch_state(std::in_place_t /*tag*/, Args&&... args)
      : value_(std::in_place, std::forward<Args>(args)...) {}
  watch_state(watch_state const&) = delete;
  auto operator=(watch_state const&) -> watch_state& = delete;
  ~watch_state() = default;

  // ---- the value, under the lock ----

  /// Locks the value for reading or writing; returns the version of the value now there.
  /// Misuse, in every build: locking it again on a thread whose guard holds it (a deadlock).
  auto lock() noexcept -> std::uint64_t {
    // relaxed: this thread's own token is found only if this thread wrote it (and has not
    // cleared it): a guard of this thread holds the lock.
    SPINDLE_CHECK(holder_.load(std::memory_order_relaxed) != this_thread_token(),
                  "spindle::watch: a borrow() guard on this thread holds the value; sending or "
                  "borrowing again here would wait for it for ever");
    mutex_.lock();
    // relaxed: under mutex_; the version moves only under mutex_.
    return version_.load(std::memory_order_relaxed) >> 1U;
  }
  /// As lock(), for a guard that keeps the lock: records this thread as the holder.
  auto lock_for_guard() noexcept -> std::uint64_t {
    auto const v = lock();
    // relaxed: written under mutex_; see holder_.
    holder_.store(this_thread_token(), std::memory_order_relaxed);
    return v;
  }
  void unlock_guard() noexcept {
    // relaxed: under mutex_, before the unlock that publishes it.
    holder_.store(0, std::memory_order_relaxed);
    mutex_.unlock();
  }
  /// The value. Preconditions: the caller holds the lock.
  auto value() noexcept -> T& { return *value_; }

  // ---- the sender ----

  /// Runs `f(value)` under the lock. `f` returns whether it modified the value (a void `f`
  /// always does); if so, or if `f` throws, the version moves on and the receivers wake.
  /// Returns whether the version moved on.
  /// Throws: whatever `f` throws (the value is then whatever `f` left).
  template <class F>
  auto modify(F& f) -> bool {
    // Holding the lock as a guard does: `f` borrowing or sending on this watch is reported.
    static_cast<void>(lock_for_guard());
    bool modified = true;
    try {
      if constexpr (std::is_void_v<std::invoke_result_t<F&, T&>>) {
        std::invoke(f, *value_);
      } else {
        modified = static_cast<bool>(std::invoke(f, *value_));
      }
    } catch (...) {
      publish_and_unlock();
      throw;
    }
    if (!modified) {
      unlock_guard();
      return false;
    }
    publish_and_unlock();
    return true;
  }

  /// The sender handle is going: receivers that saw the last version see closed.
  void drop_sender() noexcept {
    // seq_cst: the event's state change (wait_list.hpp (B)) before the wake's is_empty load.
    static_cast<void>(version_.fetch_or(closed, std::memory_order_seq_cst));
    wake_all_waiting(list_);
    release(1);
  }

  // ---- receivers ----

  /// One more receiver handle. Preconditions: the caller holds a handle (the state is alive).
  void add_receiver() noexcept {
    // relaxed: a new handle made from a live one, as a shared_ptr copy; the release in
    // release() orders every use before the delete.
    static_cast<void>(handles_.fetch_add(2, std::memory_order_relaxed));
  }
  void drop_receiver() noexcept { release(2); }

  [[nodiscard]] auto receiver_count() const noexcept -> std::size_t {
    // acquire: pairs with release()'s acq_rel decrement: a sender that sees no receiver left
    // sees everything they did.
    return static_cast<std::size_t>(handles_.load(std::memory_order_acquire) >> 1U);
  }

  /// The current version and whether the sender is gone (a snapshot).
  [[nodiscard]] auto version_word() const noexcept -> std::uint64_t {
    // acquire: pairs with the bump in publish_and_unlock() and drop_sender().
    return version_.load(std::memory_order_acquire);
  }

  /// A receiver that saw version `seen`: completes with true (and `seen` moved on to the
  /// current version) when the version differs, with false when the sender is gone and no
  /// version is unseen; false when it must wait.
  auto poll(std::uint64_t& seen, bool& out) const noexcept -> bool {
    // acquire: pairs with the seq_cst (release) bump: what the sender did before it is visible.
    std::uint64_t const v = version_.load(std::memory_order_acquire);
    if ((v >> 1U) != seen) {
      seen = v >> 1U;
      out = true;
      return true;
    }
    if ((v & closed) != 0) {
      out = false;
      return true;
    }
    return false;
  }

  /// The re-check after registering: whether poll() would complete now.
  [[nodiscard]] auto ready(std::uint64_t seen) const noexcept -> bool {
    // seq_cst: the waiter's half of the Dekker pair (wait_list.hpp (A)).
    std::uint64_t const v = version_.load(std::memory_order_seq_cst);
    return (v >> 1U) != seen || (v & closed) != 0;
  }

  [[nodiscard]] auto list() noexcept -> wait_list& { return list_; }

 private:
  /// Moves the version on, unlocks, wakes every waiting receiver.
  /// Preconditions: the caller holds the lock.
  void publish_and_unlock() noexcept {
    // seq_cst: the event's state change (wait_list.hpp (B)): a release that publishes the
    // change to a receiver's acquire look at the version, ordered before the is_empty load of
    // wake_all_waiting(). Under the lock, so a reader of version v reads the value of v.
    static_cast<void>(version_.fetch_add(2, std::memory_order_seq_cst));
    unlock_guard();
    wake_all_waiting(list_);
  }

  void release(std::uint64_t n) noexcept {
    // acq_rel: the last handle to go sees everything the others did (release) before it deletes
    // the state (acquire).
    if (handles_.fetch_sub(n, std::memory_order_acq_rel) == n) {
      delete this;
    }
  }

  mutex mutex_;
  // INVARIANT: engaged (an optional only so that a replacement can destroy and construct).
  std::optional<T> value_;
  atomic<std::uint64_t> version_{0};
  atomic<std::uint64_t> handles_{3};  // the sender and one receiver
  atomic<std::uintptr_t> holder_{0};
  wait_list list_;
};

/// A receiver's wait for a newer version as an event source (detail/sync/event_case.hpp): the
/// outcome is true for a newer version, false once the sender is gone and none is unseen.
template <class T>
struct watch_source {
  using outcome = bool;
  watch_state<T>* state;
  std::uint64_t* seen;

  auto poll(outcome& out) const noexcept -> bool { return state->poll(*seen, out); }
  [[nodiscard]] auto list() const noexcept -> wait_list& { return state->list(); }
  [[nodiscard]] auto ready() const noexcept -> bool { return state->ready(*seen); }
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
