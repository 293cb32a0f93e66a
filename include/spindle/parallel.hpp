#pragma once
// parallel_for and parallel_reduce over an index range, on a spindle::executor.
//
// Algorithm: recursive halving on top of spindle::join (detail in executor.hpp), with
// rayon's adaptive splitter (rayon-core, iter/plumbing "Splitter"): a range starts with a
// budget of about one split per worker doubled; each split halves the budget, and a half that
// was stolen by another worker (it "migrated") gets a fresh budget, so idle workers keep
// finding big halves to steal while a busy machine runs long serial stretches. A range is
// never split below `grain` elements.
//
// Indices: an integer type (every range of it, counted in its unsigned type) or a random-access
// iterator. `f(i)` is called once for every i in [first, last), in no particular order and
// possibly concurrently.
//
// From a worker, the loop runs in place and the worker helps while it waits. From any other
// thread, the caller takes one of the executor's guest slots and does the same (its halves
// are stolen from the slot's deque by workers it wakes at entry, as many as the range can
// keep busy: executor_core::wake_for_guest), so the loop starts at once instead of after a
// sleeping worker wakes; with every slot taken, the whole loop is injected as one task and
// the caller sleeps (detail::run_as_root). No allocation either way.
//
// Exceptions: if f (or map/reduce) throws, the remaining work of that branch is skipped, the
// other branches still finish, and one of the exceptions propagates to the caller.
//
// Happens-before: every call of f happens-before parallel_for returns.
// Example: tests/parallel_test.cpp (Example).

#include <spindle/detail/executor/executor_core.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/executor.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

/// What parallel_for can split: an integer type other than bool, or a random-access iterator
/// (both support `first + n` and `last - first`). Every range of an integer type works, up to
/// [INT64_MIN, INT64_MAX) and [0, UINT64_MAX): lengths are counted in the unsigned type of the
/// index. bool is left out: a bool range holds at most one index, and bool has no unsigned
/// counterpart to count in.
template <class I>
concept parallel_index = (std::integral<I> && !std::same_as<std::remove_cv_t<I>, bool>) ||
                         std::random_access_iterator<I>;

namespace detail {

inline auto core_local(executor& ex) noexcept -> worker_ctx* {
  return detail::core_of(ex).local();
}

/// The unsigned type that counts the indices of a range of `I`: wide enough for the length of
/// the longest range of I (2^64 - 1 for std::uint64_t; a signed difference type would overflow
/// on [INT_MIN, 0)) and for every grain, a std::size_t.
template <class I>
struct loop_count {
  // A random-access iterator whose difference type is integer-class ([iterator.concept.winc]):
  // no make_unsigned_t exists, and its ranges fit the widest unsigned integer.
  using type = std::uintmax_t;
};

template <class I>
requires std::integral<I>
struct loop_count<I> {
  using type = std::common_type_t<std::make_unsigned_t<I>, std::size_t>;
};

template <class I>
requires(!std::integral<I> && std::integral<std::iter_difference_t<I>>) struct loop_count<I> {
  using type = std::common_type_t<std::make_unsigned_t<std::iter_difference_t<I>>, std::size_t>;
};

template <class I>
using loop_count_t = typename loop_count<I>::type;

/// The number of indices in [first, last); 0 when first >= last.
template <class I>
auto index_count(I first, I last) -> loop_count_t<I> {
  using count = loop_count_t<I>;
  if constexpr (std::integral<I>) {
    // `last - first` in I overflows once the length passes the largest I ([INT_MIN, 0)). In
    // the unsigned type the subtraction is modular ([basic.fundamental]/2), and the true
    // length lies in [1, 2^N), so the modular result is the length itself.
    using u = std::make_unsigned_t<I>;
    return last > first
               ? static_cast<count>(static_cast<u>(static_cast<u>(last) - static_cast<u>(first)))
               : count{0};
  } else {
    // Representable: [first, last) is a valid range of a random-access iterator.
    auto const d = last - first;
    return d > 0 ? static_cast<count>(d) : count{0};
  }
}

/// The index `offset` places after `first`. Preconditions: `offset` is at most the length of
/// the range that starts at `first`, so the result is an index of that range or its end.
template <class I>
auto index_at(I first, loop_count_t<I> offset) -> I {
  if constexpr (std::integral<I>) {
    // The result is representable, but `first + offset` computed in I may overflow on the
    // way (first = INT_MIN, offset = 2^31: the offset is not even an int). In the unsigned
    // type the sum is exact modulo 2^N, and converting it back to I yields the unique value
    // congruent to it modulo 2^N (C++20 [conv.integral]/3): the index itself.
    using u = std::make_unsigned_t<I>;
    return static_cast<I>(static_cast<u>(static_cast<u>(first) + static_cast<u>(offset)));
  } else {
    return first + static_cast<std::iter_difference_t<I>>(offset);
  }
}

/// rayon's adaptive splitter: how many more times a range may split.
struct splitter {
  std::size_t splits;
  std::size_t reset;

  /// Whether to split now; `migrated` says the range runs on another worker than its parent.
  auto try_split(bool migrated) noexcept -> bool {
    if (migrated) {
      splits = std::max(reset, splits / 2);
      return true;
    }
    if (splits > 0) {
      splits /= 2;
      return true;
    }
    return false;
  }
};

/// The serial part of a range: a plain counted loop.
template <class I, class F>
void for_leaf(I first, loop_count_t<I> n, F& f) {
  for (loop_count_t<I> i = 0; i < n; ++i) {
    std::invoke(f, index_at(first, i));
  }
}

template <class I, class F>
void for_range(executor& ex, worker_ctx* parent, I first, loop_count_t<I> n, loop_count_t<I> grain,
               splitter sp, F& f) {
  bool const migrated = core_local(ex) != parent;
  if (n > grain && sp.try_split(migrated)) {
    auto const half = n / 2;
    worker_ctx* const here = core_local(ex);
    auto left = [&] { for_range(ex, here, first, half, grain, sp, f); };
    auto right = [&] { for_range(ex, here, index_at(first, half), n - half, grain, sp, f); };
    static_cast<void>(spindle::join(ex, left, right));
    return;
  }
  for_leaf(first, n, f);
}

/// The serial part of a reduction. The accumulator lives in a std::optional and each step
/// constructs the next one in place (emplace) instead of assigning it, so that T need only be
/// move-constructible. static_cast<T> makes the step's result a distinct object before emplace
/// destroys the old accumulator, in case `reduce` returns a reference to its first argument;
/// for a result that already is a T prvalue it is the same object (no extra move).
template <class T, class I, class Map, class Reduce>
auto reduce_leaf(I first, loop_count_t<I> n, Map& map, Reduce& reduce) -> T {
  std::optional<T> acc(std::in_place, std::invoke(map, first));
  for (loop_count_t<I> i = 1; i < n; ++i) {
    acc.emplace(
        static_cast<T>(std::invoke(reduce, std::move(*acc), std::invoke(map, index_at(first, i)))));
  }
  return std::move(*acc);
}

template <class T, class I, class Map, class Reduce>
auto reduce_range(executor& ex, worker_ctx* parent, I first, loop_count_t<I> n, splitter sp,
                  Map& map, Reduce& reduce) -> T {
  bool const migrated = core_local(ex) != parent;
  if (n >= 2 && sp.try_split(migrated)) {
    auto const half = n / 2;
    worker_ctx* const here = core_local(ex);
    auto left = [&]() -> T { return reduce_range<T>(ex, here, first, half, sp, map, reduce); };
    auto right = [&]() -> T {
      return reduce_range<T>(ex, here, index_at(first, half), n - half, sp, map, reduce);
    };
    auto [l, r] = spindle::join(ex, left, right);
    return std::invoke(reduce, std::move(l), std::move(r));
  }
  return reduce_leaf<T>(first, n, map, reduce);
}

inline auto initial_splitter(executor& ex) noexcept -> splitter {
  std::size_t const n = ex.size();
  return {2 * n, n};
}

/// How many workers a loop over `n` indices, never split below `grain`, can keep busy besides
/// the thread that starts it. Preconditions: n >= 1, grain >= 1.
template <class Count>
auto loop_helpers(executor& ex, Count n, Count grain) noexcept -> std::size_t {
  Count const pieces = (n - 1) / grain + 1;  // ceil(n / grain), with no overflow at n = max
  return static_cast<std::size_t>(std::min<Count>(ex.size(), pieces - 1));
}

template <class Fn>
auto run_in_workers(executor& ex, Fn& fn, std::size_t helpers) -> stored_result_t<Fn> {
  if (detail::core_of(ex).local() != nullptr) {
    if constexpr (std::is_void_v<std::invoke_result_t<Fn&>>) {
      fn();
      return {};
    } else {
      return fn();
    }
  }
  return run_as_root(detail::core_of(ex), fn, helpers);
}

}  // namespace detail

/// Calls `f(i)` for every i in [first, last), in parallel, never splitting a range shorter
/// than `grain` (grain 0 counts as 1; a grain at least the length of the range, up to
/// SIZE_MAX, runs one serial loop on the calling thread). An empty or reversed range
/// (first >= last) calls nothing.
///
/// Thread safety: any thread. Throws: whatever f throws; std::invalid_argument if f is a null
/// pointer to function or member; std::logic_error after shutdown (called from outside the
/// workers).
template <parallel_index I, class F>
requires std::invocable<F&, I>
void parallel_for(executor& ex, I first, I last, std::size_t grain, F&& f) {
  detail::check_not_null(f, "spindle::parallel_for: f is a null pointer");
  using count = detail::loop_count_t<I>;
  count const n = detail::index_count(first, last);
  if (n == 0) {
    return;
  }
  // count is at least as wide as std::size_t, so every grain fits.
  count const g = grain == 0 ? 1 : grain;
  auto body = [&] {
    detail::for_range(ex, detail::core_local(ex), first, n, g, detail::initial_splitter(ex), f);
  };
  detail::run_in_workers(ex, body, detail::loop_helpers(ex, n, g));
}

/// parallel_for with grain 1: the adaptive splitter alone decides how far to split.
template <parallel_index I, class F>
requires std::invocable<F&, I>
void parallel_for(executor& ex, I first, I last, F&& f) {
  parallel_for(ex, first, last, std::size_t{1}, std::forward<F>(f));
}

/// Returns reduce(init, reduce(map(first), ..., map(last - 1))), grouping the reduce calls
/// in an unspecified way: `reduce` must be associative (not necessarily commutative: the
/// order of the elements is kept). `init` is used once; an empty range returns `init`.
/// T need only be move-constructible: partial results are never assigned, only constructed
/// and destroyed, each exactly once, also when map or reduce throws.
///
/// Thread safety: any thread. Throws: whatever map or reduce throws; std::invalid_argument if
/// map or reduce is a null pointer to function or member; std::logic_error after shutdown
/// (called from outside the workers).
template <parallel_index I, class T, class Map, class Reduce>
requires std::invocable<Map&, I> && std::move_constructible<T> &&
    std::convertible_to<std::invoke_result_t<Map&, I>, T> &&
    std::convertible_to<std::invoke_result_t<Reduce&, T, T>, T>
auto parallel_reduce(executor& ex, I first, I last, T init, Map&& map, Reduce&& reduce) -> T {
  detail::check_not_null(map, "spindle::parallel_reduce: map is a null pointer");
  detail::check_not_null(reduce, "spindle::parallel_reduce: reduce is a null pointer");
  auto const n = detail::index_count(first, last);
  if (n == 0) {
    return init;
  }
  auto body = [&]() -> T {
    return detail::reduce_range<T>(ex, detail::core_local(ex), first, n,
                                   detail::initial_splitter(ex), map, reduce);
  };
  T total = detail::run_in_workers(ex, body, detail::loop_helpers(ex, n, decltype(n){1}));
  return std::invoke(reduce, std::move(init), std::move(total));
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE
