// SPDX-License-Identifier: BSL-1.0
#pragma once
// The instrumented atomic and the blocking hooks that <spindle/detail/sync/atomic.hpp> uses when
// SPINDLE_MODEL_CHECK is defined.
//
// Every operation first stops at a scheduling point of the running model execution (see
// <spindle/model/scheduler.hpp>), then performs the operation on a plain value while it holds
// the execution's token (so operations are atomic and sequentially consistent), then updates
// the vector clocks from the declared memory order, and reports the operation to the coherence
// meter when one is set (options::meter, coherence.hpp). Called outside any execution (by a single
// thread, e.g. while a test builds a structure) they are plain, unscheduled operations.
//
// The API is the part of std::atomic that spindle uses: construction, is_always_lock_free,
// load/store/exchange/compare_exchange_{weak,strong}, fetch_add/sub/and/or/xor for integers
// and fetch_add/sub for pointers. T is trivially copyable and at most 8 bytes; compare-exchange
// compares object representations, as std::atomic does.
//
// Thread safety: as std::atomic, for threads of one model execution.

#include <spindle/model/scheduler.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace spindle::model {

namespace impl {

template <class T>
concept integral_word = std::is_integral_v<T> && !std::is_same_v<T, bool>;

template <class T>
auto bits_of(T const& v) noexcept -> std::uint64_t {
  std::uint64_t out = 0;
  std::memcpy(&out, &v, sizeof(T));
  return out;
}

/// The scheduling point before an atomic operation; nullptr outside an execution.
inline auto enter(char const* what, void const* addr) -> execution* {
  auto* ex = current_execution;
  if (ex != nullptr) {
    ex->yield(current_thread, what, addr);
  }
  return ex;
}

/// As enter(), for an operation that drains the store buffer first (x86 locked instructions,
/// seq_cst stores, fences and system calls).
inline auto enter_serialising(char const* what, void const* addr) -> execution* {
  auto* ex = enter(what, addr);
  if (ex != nullptr) {
    ex->drain(current_thread);
  }
  return ex;
}

/// Order as data: the failure order of a compare-exchange given one order, derived as
/// std::atomic does: a failed compare-exchange only loads, so it keeps no release half.
inline auto failure_order(std::memory_order o) noexcept -> std::memory_order {
  if (o == std::memory_order_acq_rel) {  // order as data: acq_rel fails as acquire
    return std::memory_order_acquire;    // order as data: the load half of acq_rel
  }
  if (o == std::memory_order_release) {  // order as data: release fails as relaxed
    return std::memory_order_relaxed;    // order as data: release has no load half
  }
  return o;
}

/// The instrumented atomic. It lives in impl, and model::atomic is an alias of it, so that
/// argument-dependent lookup of an unqualified futex_wait(word, ...) in library code finds only
/// the detail:: function, not also the model:: one it forwards to.
template <class T>
class atomic {
  static_assert(std::is_trivially_copyable_v<T>, "model::atomic<T> needs a trivially copyable T");
  static_assert(sizeof(T) <= 8, "model::atomic<T> supports T of at most 8 bytes");

 public:
  static constexpr bool is_always_lock_free = true;

  constexpr atomic() noexcept : value_() {}
  constexpr atomic(T desired) noexcept : value_(desired) {}  // NOLINT: mirrors std::atomic
  atomic(atomic const&) = delete;
  auto operator=(atomic const&) -> atomic& = delete;

  ~atomic() {
    if (auto* ex = current_execution; ex != nullptr) {
      if (ex->buffering()) {
        ex->drop_buffered(this);
      }
      ex->drop_location(this);
    }
  }

  // Order as data: the caller's order (seq_cst by default, as std::atomic), forwarded to
  // after_load(), which joins the clock of the release store it reads from if it acquires.
  [[nodiscard]] auto load(std::memory_order order = std::memory_order_seq_cst) const noexcept -> T {
    auto* ex = impl::enter("load", this);
    T v = value_;
    if (ex != nullptr) {
      std::uint64_t bits = 0;
      if (ex->buffering() && ex->forwarded(impl::current_thread, this, bits)) {
        // Store forwarding: the thread reads its own buffered store; no synchronisation.
        std::memcpy(&v, &bits, sizeof(T));
        ex->after_forwarded_load(impl::current_thread, this, bits);
        return v;
      }
      ex->metered(impl::current_thread, coherence_op::load, this, sizeof(T));
      // In weak_memory mode the value read may be an older store's (execution::read_weak).
      std::uint64_t const read =
          ex->after_load(impl::current_thread, order, this, impl::bits_of(v), "load");
      std::memcpy(&v, &read, sizeof(T));
    }
    return v;
  }

  // Order as data: the caller's order (seq_cst by default, as std::atomic), forwarded to
  // after_store() or buffer_store(), which leave the clock a later acquire load joins.
  void store(T desired, std::memory_order order = std::memory_order_seq_cst) noexcept {
    auto* ex = impl::enter("store", this);
    if (ex != nullptr) {
      ex->metered(impl::current_thread, coherence_op::store, this, sizeof(T));
    }
    if (ex != nullptr && ex->buffering()) {
      // order as data: a seq_cst store drains the buffer (x86 xchg); any other store waits in it.
      if (order != std::memory_order_seq_cst) {
        ex->buffer_store(impl::current_thread, order, &value_, this, sizeof(T),
                         impl::bits_of(desired));
        return;
      }
      ex->drain(impl::current_thread);
    }
    T const previous = value_;
    value_ = desired;
    if (ex != nullptr) {
      ex->after_store(impl::current_thread, order, this, impl::bits_of(desired),
                      impl::bits_of(previous));
    }
  }

  // Order as data: the caller's order (seq_cst by default, as std::atomic), forwarded to
  // after_rmw(), which records the acquire/release edges it stands for.
  auto exchange(T desired, std::memory_order order = std::memory_order_seq_cst) noexcept -> T {
    auto* ex = impl::enter_serialising("exchange", this);
    T const old = value_;
    value_ = desired;
    if (ex != nullptr) {
      ex->metered(impl::current_thread, coherence_op::rmw, this, sizeof(T));
      ex->after_rmw(impl::current_thread, order, this, impl::bits_of(desired), "exchange",
                    impl::bits_of(old));
    }
    return old;
  }

  // Orders as data: the caller's success order goes to after_rmw(), its failure order to
  // after_load() (a failed compare-exchange only loads).
  auto compare_exchange_strong(T& expected, T desired, std::memory_order success,
                               std::memory_order failure) noexcept -> bool {
    auto* ex = impl::enter_serialising("compare_exchange", this);
    if (std::memcmp(&value_, &expected, sizeof(T)) == 0) {
      T const previous = value_;
      value_ = desired;
      if (ex != nullptr) {
        ex->metered(impl::current_thread, coherence_op::rmw, this, sizeof(T));
        ex->after_rmw(impl::current_thread, success, this, impl::bits_of(desired), "cas (succeeds)",
                      impl::bits_of(previous));
      }
      return true;
    }
    expected = value_;
    if (ex != nullptr) {
      // A write intent on x86 (LOCK CMPXCHG takes the line exclusive whatever the outcome).
      ex->metered(impl::current_thread, coherence_op::cas_failure, this, sizeof(T));
      static_cast<void>(ex->after_load(impl::current_thread, failure, this, impl::bits_of(value_),
                                       "cas (fails)", /*latest=*/true));
    }
    return false;
  }
  // Order as data: one order for both outcomes, the failure order derived by failure_order().
  auto compare_exchange_strong(T& expected, T desired,
                               std::memory_order order = std::memory_order_seq_cst) noexcept
      -> bool {
    return compare_exchange_strong(expected, desired, order, impl::failure_order(order));
  }
  /// Never fails spuriously in the model (see the limitations in scheduler.hpp).
  /// Orders as data: forwarded to compare_exchange_strong().
  auto compare_exchange_weak(T& expected, T desired, std::memory_order success,
                             std::memory_order failure) noexcept -> bool {
    return compare_exchange_strong(expected, desired, success, failure);
  }
  // Order as data: one order for both outcomes, the failure order derived by failure_order().
  auto compare_exchange_weak(T& expected, T desired,
                             std::memory_order order = std::memory_order_seq_cst) noexcept -> bool {
    return compare_exchange_strong(expected, desired, order, impl::failure_order(order));
  }

  // Order as data: the caller's order (seq_cst by default, as std::atomic), forwarded to
  // after_rmw(), which records the acquire/release edges it stands for.
  auto fetch_add(T arg, std::memory_order order = std::memory_order_seq_cst) noexcept -> T
  requires impl::integral_word<T>
  {
    return rmw("fetch_add", order, [arg](T v) { return wrap(v, arg, true); });
  }
  // Order as data: the caller's order (seq_cst by default, as std::atomic), forwarded to
  // after_rmw(), which records the acquire/release edges it stands for.
  auto fetch_sub(T arg, std::memory_order order = std::memory_order_seq_cst) noexcept -> T
  requires impl::integral_word<T>
  {
    return rmw("fetch_sub", order, [arg](T v) { return wrap(v, arg, false); });
  }
  // Order as data: the caller's order (seq_cst by default, as std::atomic), forwarded to
  // after_rmw(), which records the acquire/release edges it stands for.
  auto fetch_and(T arg, std::memory_order order = std::memory_order_seq_cst) noexcept -> T
  requires impl::integral_word<T>
  {
    return rmw("fetch_and", order, [arg](T v) { return static_cast<T>(v & arg); });
  }
  // Order as data: the caller's order (seq_cst by default, as std::atomic), forwarded to
  // after_rmw(), which records the acquire/release edges it stands for.
  auto fetch_or(T arg, std::memory_order order = std::memory_order_seq_cst) noexcept -> T
  requires impl::integral_word<T>
  {
    return rmw("fetch_or", order, [arg](T v) { return static_cast<T>(v | arg); });
  }
  // Order as data: the caller's order (seq_cst by default, as std::atomic), forwarded to
  // after_rmw(), which records the acquire/release edges it stands for.
  auto fetch_xor(T arg, std::memory_order order = std::memory_order_seq_cst) noexcept -> T
  requires impl::integral_word<T>
  {
    return rmw("fetch_xor", order, [arg](T v) { return static_cast<T>(v ^ arg); });
  }
  // Order as data: the caller's order (seq_cst by default, as std::atomic), forwarded to
  // after_rmw(), which records the acquire/release edges it stands for.
  auto fetch_add(std::ptrdiff_t arg, std::memory_order order = std::memory_order_seq_cst) noexcept
      -> T
  requires std::is_pointer_v<T>
  {
    return rmw("fetch_add", order, [arg](T v) { return v + arg; });
  }
  // Order as data: the caller's order (seq_cst by default, as std::atomic), forwarded to
  // after_rmw(), which records the acquire/release edges it stands for.
  auto fetch_sub(std::ptrdiff_t arg, std::memory_order order = std::memory_order_seq_cst) noexcept
      -> T
  requires std::is_pointer_v<T>
  {
    return rmw("fetch_sub", order, [arg](T v) { return v - arg; });
  }

  /// The current value without a scheduling point or clock update: for the scheduler's futex
  /// emulation and for assertions made while no other thread runs.
  [[nodiscard]] auto peek() const noexcept -> T { return value_; }

 private:
  static auto wrap(T a, T b, bool add) noexcept -> T {
    using U = std::make_unsigned_t<T>;
    auto const ua = static_cast<U>(a);
    auto const ub = static_cast<U>(b);
    return static_cast<T>(add ? static_cast<U>(ua + ub) : static_cast<U>(ua - ub));
  }

  // Order as data: the order of the public read-modify-write that calls this, forwarded to
  // after_rmw().
  template <class Fn>
  auto rmw(char const* what, std::memory_order order, Fn fn) noexcept -> T {
    auto* ex = impl::enter_serialising(what, this);
    T const old = value_;
    value_ = fn(old);
    if (ex != nullptr) {
      ex->metered(impl::current_thread, coherence_op::rmw, this, sizeof(T));
      ex->after_rmw(impl::current_thread, order, this, impl::bits_of(value_), what,
                    impl::bits_of(old));
    }
    return old;
  }

  // Aligned as std::atomic<T> is, and nothing else in the object: the model's atomic has the
  // size and alignment of the real one, so the library's structures keep their real layout
  // (which slots share a line, what fits a line) under the checker. Its memory-order state
  // lives in the execution, keyed by address (execution::location_of).
  alignas(std::atomic<T>) T value_;
};

static_assert(sizeof(atomic<std::uint64_t>) == sizeof(std::atomic<std::uint64_t>) &&
                  alignof(atomic<std::uint64_t>) == alignof(std::atomic<std::uint64_t>) &&
                  sizeof(atomic<std::uint32_t>) == sizeof(std::atomic<std::uint32_t>) &&
                  sizeof(atomic<void*>) == sizeof(std::atomic<void*>),
              "the model's atomic keeps the layout of std::atomic");

}  // namespace impl

template <class T>
using atomic = impl::atomic<T>;

/// A thread fence; the library only issues seq_cst ones (acquire + release in the clocks).
inline void fence(std::memory_order order) noexcept {
  if (auto* ex = impl::enter_serialising("fence", nullptr); ex != nullptr) {
    ex->metered(impl::current_thread, coherence_op::fence, nullptr, 0);
    ex->fence(impl::current_thread, order);
  }
}

/// The heavy side of an asymmetric fence pair: drains every thread's store buffer, then fences
/// the caller (execution::heavy_fence).
inline void heavy_fence() noexcept {
  if (auto* ex = impl::enter_serialising("heavy_fence", nullptr); ex != nullptr) {
    ex->metered(impl::current_thread, coherence_op::heavy_fence, nullptr, 0);
    ex->heavy_fence(impl::current_thread);
  }
}

/// One busy-wait step: a scheduling point; repeated spinning with no write anywhere makes the
/// thread yield to the others (see "livelocks" in scheduler.hpp).
inline void spin_pause() noexcept {
  if (auto* ex = impl::current_execution; ex != nullptr) {
    ex->spin(impl::current_thread, "spin_pause");
  }
}

inline void thread_yield() noexcept {
  if (auto* ex = impl::current_execution; ex != nullptr) {
    ex->spin(impl::current_thread, "thread_yield");
  }
}

/// Sleeps while `word == expected` until a futex_wake on `word`. Never wakes spuriously.
inline void futex_wait(atomic<std::uint32_t>& word, std::uint32_t expected) noexcept {
  auto* ex = impl::enter_serialising("futex_wait", &word);
  if (ex == nullptr) {
    if (word.peek() == expected) {
      impl::outside_execution("futex_wait that would block");
    }
    return;
  }
  static_cast<void>(ex->futex_wait(impl::current_thread, &word, word.peek(), expected, false));
}

/// As futex_wait, with virtual time: the scheduler may let the deadline pass at any point
/// while the thread sleeps. A deadline of time_point::max() never passes. Returns false when
/// the deadline passed.
inline auto futex_wait_until(atomic<std::uint32_t>& word, std::uint32_t expected,
                             std::chrono::steady_clock::time_point deadline) noexcept -> bool {
  auto* ex = impl::enter_serialising("futex_wait_until", &word);
  bool const timed = deadline != std::chrono::steady_clock::time_point::max();
  if (ex == nullptr) {
    // Alone outside an execution nobody can wake us: the deadline is what ends the wait.
    return word.peek() != expected || !timed;
  }
  return ex->futex_wait(impl::current_thread, &word, word.peek(), expected, timed);
}

inline void futex_wake_one(atomic<std::uint32_t>& word) noexcept {
  if (auto* ex = impl::enter_serialising("futex_wake_one", &word); ex != nullptr) {
    ex->futex_wake(impl::current_thread, &word, false);
  }
}

inline void futex_wake_all(atomic<std::uint32_t>& word) noexcept {
  if (auto* ex = impl::enter_serialising("futex_wake_all", &word); ex != nullptr) {
    ex->futex_wake(impl::current_thread, &word, true);
  }
}

/// Marks a plain read of shared payload at `addr` for the race detector (not a scheduling
/// point); the coherence meter counts the lines of [addr, addr + size).
inline void note_read(void const* addr, std::size_t size) noexcept {
  if (auto* ex = impl::current_execution; ex != nullptr) {
    ex->access(impl::current_thread, addr, size, false);
  }
}

/// Marks a plain write of shared payload at `addr` for the race detector.
inline void note_write(void const* addr, std::size_t size) noexcept {
  if (auto* ex = impl::current_execution; ex != nullptr) {
    ex->access(impl::current_thread, addr, size, true);
  }
}

/// A prefetch for write (x86 PREFETCHW) of the line of `addr`: not a scheduling point and no
/// effect on the clocks; the coherence meter counts it as a write intent (it takes the line
/// exclusive as a store would).
inline void prefetch_for_write(void const* addr) noexcept {
  if (auto* ex = impl::current_execution; ex != nullptr) {
    ex->metered(impl::current_thread, coherence_op::prefetch_for_write, addr, 1);
  }
}

/// A plain (non-atomic) variable whose accesses the race detector sees. For test payloads.
template <class T>
class plain {
 public:
  constexpr plain() = default;
  constexpr explicit plain(T v) : value_(v) {}
  [[nodiscard]] auto get() const noexcept -> T {
    note_read(&value_, sizeof(T));
    return value_;
  }
  void set(T v) noexcept {
    note_write(&value_, sizeof(T));
    value_ = v;
  }

 private:
  T value_{};
};

}  // namespace spindle::model
