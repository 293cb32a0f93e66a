// SPDX-License-Identifier: BSL-1.0
#pragma once
// The vocabulary of spindle's work-stealing deque that a user names: which types it holds
// (`stealable`), the owner's pop order (`deque_order`), and how a steal ended (`steal_status`,
// `steal_result`, `steal_batch_result`). Included by <spindle/deque.hpp>. The results have
// the shape every spindle result has (channel_result.hpp says it once).

#include <spindle/detail/sync/config.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

namespace detail {

/// The requirement behind `stealable`, spelled as its own advice so compilers print it.
template <class T>
concept trivially_copyable_and_at_most_8_bytes_store_a_pointer_or_an_index_instead =
    std::is_trivially_copyable_v<T> && sizeof(T) <= 8 && std::has_single_bit(sizeof(T));

}  // namespace detail

/// A type a work-stealing deque can hold. A thief reads a slot speculatively, before its CAS
/// on `top` decides whether the read counts, while the owner may be writing the same slot a
/// lap later. That read is race-free only as an atomic load, so the value must be trivially
/// copyable and fit a lock-free atomic word: at most 8 bytes (a power-of-two size). To move
/// anything larger, store a pointer or an index to it.
template <class T>
concept stealable =
    detail::trivially_copyable_and_at_most_8_bytes_store_a_pointer_or_an_index_instead<T>;

/// The order in which the owner's `pop` takes items: the newest (lifo, the default, best for
/// cache locality in fork-join) or the oldest (fifo, fairer). Thieves always take the oldest.
enum class deque_order : std::uint8_t { lifo, fifo };

/// Outcome of a steal: took an item (`stolen`); the deque was empty; or lost a race with
/// another taker (`retry`: try again, possibly another victim first). The results follow the
/// common shape of spindle's results (channel_result.hpp).
enum class steal_status : std::uint8_t {
  stolen,  ///< an item was taken
  empty,   ///< nothing to take
  retry,   ///< lost a race with another taker
  /// The 0.1.0 name of `stolen`, removed at 1.0.
  success [[deprecated("spindle: steal_status::success is now steal_status::stolen")]] = stolen
};

/// Result of `stealer<T>::steal`: a status and, exactly when it is `stolen`, the item.
template <class T>
struct [[nodiscard]] steal_result {
  steal_status status;
  std::optional<T> value;  // engaged iff status == stolen

  explicit operator bool() const noexcept { return status == steal_status::stolen; }
  [[nodiscard]] auto is_stolen() const noexcept -> bool { return status == steal_status::stolen; }
  [[nodiscard]] auto is_empty() const noexcept -> bool { return status == steal_status::empty; }
  [[nodiscard]] auto is_retry() const noexcept -> bool { return status == steal_status::retry; }
  /// The 0.1.0 name of is_stolen(), removed at 1.0.
  [[nodiscard, deprecated("spindle: steal_result::is_success() is now is_stolen()")]] auto
  is_success() const noexcept -> bool {
    return is_stolen();
  }
};

/// Result of `stealer<T>::steal_batch`: a status and how many items were written to the
/// caller's span: at least one exactly when the status is `stolen`, otherwise none.
struct [[nodiscard]] steal_batch_result {
  steal_status status;
  std::size_t count;

  explicit operator bool() const noexcept { return status == steal_status::stolen; }
  [[nodiscard]] auto is_stolen() const noexcept -> bool { return status == steal_status::stolen; }
  [[nodiscard]] auto is_empty() const noexcept -> bool { return status == steal_status::empty; }
  [[nodiscard]] auto is_retry() const noexcept -> bool { return status == steal_status::retry; }
  /// The 0.1.0 name of is_stolen(), removed at 1.0.
  [[nodiscard, deprecated("spindle: steal_batch_result::is_success() is now is_stolen()")]] auto
  is_success() const noexcept -> bool {
    return is_stolen();
  }
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE
