// SPDX-License-Identifier: BSL-1.0
#pragma once
// spindle::deque_owner<T> / spindle::stealer<T>: the Chase-Lev work-stealing deque.
//
// One thread, the owner, holds the `deque_owner<T>` and pushes and pops at the bottom; any thread
// holding a `stealer<T>` takes the oldest item from the top. An executor gives each of its
// worker threads one deque and lets idle threads steal from the others. (The owner handle was
// called `worker<T>`, after crossbeam-deque's `Worker`; that name is a deprecated alias at
// 0.1.0, removed at 1.0: an executor's "workers" are its threads.)
// Example: examples/deque.cpp and the `Example` test in tests/deque_test.cpp.
//
// Algorithm: Chase and Lev's growable deque (SPAA 2005) with the C11 orderings that Lê, Pop,
// Cohen and Zappa Nardelli proved correct ("Correct and Efficient Work-Stealing for Weak Memory
// Models", PPoPP 2013), plus FIFO owner pops and batch stealing after crossbeam-deque. The
// state, the deviations from the paper and their correctness arguments live with the algorithm
// in detail/deque/deque_state.hpp.
//
// Thread safety: `deque_owner<T>` is used by one thread at a time (its owner; moving it to another
// thread needs the usual happens-before of the hand-over). `stealer<T>` is copyable and every
// copy may be used from any thread concurrently.
// Progress: push is wait-free except when it grows (an allocation and a copy); a LIFO pop is
// wait-free (one CAS, only on the last item, never retried); a FIFO pop is lock-free (its CAS
// is retried only when a thief took an item); steal and both batch steals are wait-free (a
// batch takes at most its bound of items) and return `retry` instead of looping when they
// lose the race for their first item.
// Happens-before: whatever the owner did before `push(v)` is visible to the thread that
// obtains `v` from `pop`, `steal`, `steal_batch_and_pop` or `steal_batch`.
// Memory: one power-of-two buffer of `detail::atomic<T>`, doubled when full and never shrunk
// (shrinking is outside the paper's proof). Retired buffers are kept by the deque and freed
// with it, when the last handle dies: growth doubles, so the retired buffers together are
// smaller than the current one and the total is under twice the peak size. No epochs, no
// hazard pointers: a thief holding an old buffer pointer always reads live memory.
// When not to use it: for values that are not a pointer or an index (see `stealable`), for
// many producers (use a channel), or when strict FIFO across threads matters.

#include <spindle/deque_result.hpp>
#include <spindle/detail/deque/deque_state.hpp>
#include <spindle/detail/sync/config.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

template <stealable T>
class stealer;

namespace detail {
/// The executor's way past the handle to the algorithm (worker_ctx::tasks): its workers own
/// their deques for the executor's lifetime, so the moved-from check and the order dispatch
/// each pop() pays are settled once, when the worker is built.
struct deque_access;
}  // namespace detail

/// The owner's handle of a work-stealing deque: push and pop, and hand out stealers.
/// Movable, not copyable. A moved-from deque_owner may only be destroyed or assigned to; any other
/// operation on it aborts with "spindle: misuse: ..." in every build.
template <stealable T>
class deque_owner {
 public:
  /// A deque whose owner pops in `order`, with room for `initial_capacity` items (rounded up
  /// to a power of two) before it first grows.
  ///
  /// Throws: std::invalid_argument if `initial_capacity` is 0 or above 2^40; std::bad_alloc.
  explicit deque_owner(deque_order order = deque_order::lifo, std::size_t initial_capacity = 64)
      : state_(new detail::deque_state<T>(order == deque_order::fifo,
                                          detail::deque_initial_capacity(initial_capacity))) {}

  deque_owner(deque_owner const&) = delete;
  auto operator=(deque_owner const&) -> deque_owner& = delete;
  deque_owner(deque_owner&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  auto operator=(deque_owner&& other) noexcept -> deque_owner& {
    if (this != &other) {
      drop();
      state_ = std::exchange(other.state_, nullptr);
    }
    return *this;
  }
  /// Items still queued stay stealable by live stealers; the deque dies with its last handle.
  ~deque_owner() { drop(); }

  /// Adds `value` at the bottom. Grows the buffer (doubling) when full.
  ///
  /// Preconditions: called by the owner; `*this` is not moved-from.
  /// Throws: std::bad_alloc when growing fails (the deque is unchanged).
  void push(T value) {
    check();
    state_->push(value);
  }

  /// Takes the newest item (LIFO, the default) or the oldest (FIFO); nullopt when empty.
  ///
  /// Preconditions: called by the owner; `*this` is not moved-from.
  [[nodiscard]] auto pop() noexcept -> std::optional<T> {
    check();
    return state_->fifo() ? state_->pop_fifo() : state_->pop_lifo();
  }

  /// A new thief handle for this deque, usable from any thread.
  ///
  /// Preconditions: `*this` is not moved-from.
  [[nodiscard]] auto stealer() const -> spindle::stealer<T> {
    check();
    state_->retain();
    return spindle::stealer<T>(state_);
  }

  /// The number of queued items. Exact when no thief is active; otherwise approximate: top
  /// and bottom are read one after the other, not as a snapshot.
  [[nodiscard]] auto size() const noexcept -> std::size_t {
    check();
    return state_->approximate_size();
  }
  /// `size() == 0`, with the same caveat.
  [[nodiscard]] auto empty() const noexcept -> bool { return size() == 0; }

  /// Slots in the current buffer (a power of two); grows, never shrinks. Owner only.
  [[nodiscard]] auto capacity() const noexcept -> std::size_t {
    check();
    return state_->owner_capacity();
  }

  [[nodiscard]] auto order() const noexcept -> deque_order {
    check();
    return state_->fifo() ? deque_order::fifo : deque_order::lifo;
  }

 private:
  friend class spindle::stealer<T>;
  friend struct detail::deque_access;

  // In every build, not only with assertions: a moved-from handle would otherwise dereference
  // null. One predictable branch per operation.
  void check() const noexcept {
    SPINDLE_CHECK(state_ != nullptr, "use of a moved-from spindle::deque_owner");
  }

  void drop() noexcept {
    if (state_ != nullptr) {
      detail::deque_state<T>::release(std::exchange(state_, nullptr));
    }
  }

  // INVARIANT: null only when moved-from; otherwise holds one reference.
  detail::deque_state<T>* state_;
};

/// A thief's handle of a work-stealing deque. Copyable; every copy may be used from any
/// thread. Keeps the deque alive. A moved-from stealer may only be destroyed, copied or
/// assigned to; any other operation on it aborts with "spindle: misuse: ..." in every build.
template <stealable T>
class stealer {
 public:
  stealer(stealer const& other) noexcept : state_(other.state_) {
    if (state_ != nullptr) {
      state_->retain();
    }
  }
  stealer(stealer&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  auto operator=(stealer other) noexcept -> stealer& {
    std::swap(state_, other.state_);
    return *this;
  }
  ~stealer() {
    if (state_ != nullptr) {
      detail::deque_state<T>::release(state_);
    }
  }

  /// Takes the oldest item. `retry` means another taker won a race for it: the deque may
  /// still hold items.
  ///
  /// Thread safety: any thread, concurrently with the owner and other thieves.
  /// Preconditions: `*this` is not moved-from.
  auto steal() noexcept -> steal_result<T> {
    check();
    return state_->steal();
  }

  /// Takes about half of the items (at most 33), returns the oldest and pushes the others,
  /// oldest first, into `dest`. One CAS claims the whole batch from a FIFO deque; from a LIFO
  /// deque items are stolen one by one and the batch stops at the first lost race (see
  /// deque_state::steal_batch_and_pop for why).
  ///
  /// Thread safety: any thread that owns `dest`.
  /// Preconditions: the caller owns `dest`; `dest` is not this deque's owner handle; neither handle
  /// is moved-from. The last two are checked in every build: a violation aborts.
  /// Throws: std::bad_alloc if `dest` cannot grow to take the batch (nothing was stolen).
  auto steal_batch_and_pop(deque_owner<T>& dest) -> steal_result<T> {
    check();
    dest.check();
    return state_->steal_batch_and_pop(*dest.state_);
  }

  /// Takes about half of the items, at most `out.size()`, and writes them to the front of
  /// `out`, oldest first; the result says how many. The batch goes to the caller alone, not
  /// into a deque where other thieves could take it back: for a thief that runs what it takes
  /// itself (a consumer draining a producer's deque). Each item then costs one claim from this
  /// deque and nothing more, where steal_batch_and_pop costs a second take from `dest`. Claims
  /// as steal_batch_and_pop does: one CAS for the whole batch from a FIFO deque, one CAS per
  /// item from a LIFO deque, stopping at the first lost race. On a result other than
  /// `stolen` nothing was taken and the contents of `out` are unspecified (a FIFO claim
  /// reads the items into it before its CAS decides).
  ///
  /// Thread safety: any thread, concurrently with the owner and other thieves.
  /// Preconditions: `out` is not empty; `*this` is not moved-from. Both are checked in every
  /// build: a violation aborts with "spindle: misuse: ...".
  auto steal_batch(std::span<T> out) noexcept -> steal_batch_result {
    check();
    SPINDLE_CHECK(!out.empty(), "spindle::stealer::steal_batch into an empty span");
    return state_->steal_batch(out.data(), out.size());
  }

  /// Approximate number of queued items (see deque_owner::size).
  [[nodiscard]] auto size() const noexcept -> std::size_t {
    check();
    return state_->approximate_size();
  }
  [[nodiscard]] auto empty() const noexcept -> bool { return size() == 0; }

 private:
  friend class deque_owner<T>;

  explicit stealer(detail::deque_state<T>* state) noexcept : state_(state) {}

  // In every build, as deque_owner::check.
  void check() const noexcept {
    SPINDLE_CHECK(state_ != nullptr, "use of a moved-from spindle::stealer");
  }

  // INVARIANT: null only when moved-from; otherwise holds one reference.
  detail::deque_state<T>* state_;
};

namespace detail {
struct deque_access {
  /// The state behind a live (not moved-from) owner handle; checked in every build.
  template <class T>
  static auto state(deque_owner<T>& owner) noexcept -> deque_state<T>& {
    owner.check();
    return *owner.state_;
  }
};
}  // namespace detail

/// The 0.1.0 name of deque_owner<T>, deprecated and removed at 1.0: an executor's "workers"
/// are its threads, so the owner handle has a name of its own.
template <stealable T>
using worker
    [[deprecated("spindle::worker<T> is now spindle::deque_owner<T>; the alias goes at "
                 "1.0")]] = deque_owner<T>;

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE
