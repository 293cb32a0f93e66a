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
// Indices: an integer type or a random-access iterator. `f(i)` is called once for every i in
// [first, last), in no particular order and possibly concurrently.
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

#include <spindle/detail/executor_core.hpp>
#include <spindle/executor.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <functional>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace spindle {

/// What parallel_for can split: an integer or a random-access iterator (both support
/// `first + n` and `last - first`).
template <class I>
concept parallel_index = std::integral<I> || std::random_access_iterator<I>;

namespace detail {

inline auto core_local(executor& ex) noexcept -> worker_ctx* {
  return ex.core().local();
}

template <class I>
auto advance_index(I first, std::ptrdiff_t n) -> I {
  if constexpr (std::integral<I>) {
    return static_cast<I>(first + static_cast<I>(n));
  } else {
    return first + static_cast<std::iter_difference_t<I>>(n);
  }
}

template <class I>
auto index_count(I first, I last) -> std::ptrdiff_t {
  if constexpr (std::integral<I>) {
    return last > first ? static_cast<std::ptrdiff_t>(last - first) : 0;
  } else {
    auto const d = last - first;
    return d > 0 ? static_cast<std::ptrdiff_t>(d) : 0;
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
void for_leaf(I first, std::ptrdiff_t n, F& f) {
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    std::invoke(f, advance_index(first, i));
  }
}

template <class I, class F>
void for_range(executor& ex, worker_ctx* parent, I first, std::ptrdiff_t n, std::ptrdiff_t grain,
               splitter sp, F& f) {
  bool const migrated = core_local(ex) != parent;
  if (n > grain && sp.try_split(migrated)) {
    std::ptrdiff_t const half = n / 2;
    worker_ctx* const here = core_local(ex);
    auto left = [&] { for_range(ex, here, first, half, grain, sp, f); };
    auto right = [&] { for_range(ex, here, advance_index(first, half), n - half, grain, sp, f); };
    static_cast<void>(spindle::join(ex, left, right));
    return;
  }
  for_leaf(first, n, f);
}

template <class T, class I, class Map, class Reduce>
auto reduce_range(executor& ex, worker_ctx* parent, I first, std::ptrdiff_t n, std::ptrdiff_t grain,
                  splitter sp, Map& map, Reduce& reduce) -> T {
  bool const migrated = core_local(ex) != parent;
  if (n > grain && n >= 2 && sp.try_split(migrated)) {
    std::ptrdiff_t const half = n / 2;
    worker_ctx* const here = core_local(ex);
    auto left = [&]() -> T {
      return reduce_range<T>(ex, here, first, half, grain, sp, map, reduce);
    };
    auto right = [&]() -> T {
      return reduce_range<T>(ex, here, advance_index(first, half), n - half, grain, sp, map,
                             reduce);
    };
    auto [l, r] = spindle::join(ex, left, right);
    return std::invoke(reduce, std::move(l), std::move(r));
  }
  T acc = std::invoke(map, first);
  for (std::ptrdiff_t i = 1; i < n; ++i) {
    acc = std::invoke(reduce, std::move(acc), std::invoke(map, advance_index(first, i)));
  }
  return acc;
}

inline auto initial_splitter(executor& ex) noexcept -> splitter {
  std::size_t const n = ex.size();
  return {2 * n, n};
}

/// How many workers a loop over `n` indices, never split below `grain`, can keep busy besides
/// the thread that starts it.
inline auto loop_helpers(executor& ex, std::ptrdiff_t n, std::ptrdiff_t grain) noexcept
    -> std::size_t {
  auto const pieces = static_cast<std::size_t>((n - 1) / grain + 1);
  return std::min(ex.size(), pieces - 1);
}

template <class Fn>
auto run_in_workers(executor& ex, Fn& fn, std::size_t helpers) -> stored_result_t<Fn> {
  if (ex.core().local() != nullptr) {
    if constexpr (std::is_void_v<std::invoke_result_t<Fn&>>) {
      fn();
      return {};
    } else {
      return fn();
    }
  }
  return run_as_root(ex.core(), fn, helpers);
}

}  // namespace detail

/// Calls `f(i)` for every i in [first, last), in parallel, never splitting a range shorter
/// than `grain` (grain 0 counts as 1).
///
/// Thread safety: any thread. Throws: whatever f throws; std::logic_error after shutdown
/// (called from outside the workers).
template <parallel_index I, class F>
requires std::invocable<F&, I>
void parallel_for(executor& ex, I first, I last, std::size_t grain, F&& f) {
  std::ptrdiff_t const n = detail::index_count(first, last);
  if (n == 0) {
    return;
  }
  // A grain past the largest range (up to SIZE_MAX) means "never split".
  constexpr auto max_grain = static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max());
  auto const g = static_cast<std::ptrdiff_t>(grain == 0 ? 1 : std::min(grain, max_grain));
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
///
/// Thread safety: any thread. Throws: whatever map or reduce throws; std::logic_error after
/// shutdown (called from outside the workers).
template <parallel_index I, class T, class Map, class Reduce>
requires std::invocable<Map&, I> && std::move_constructible<T> &&
    std::convertible_to<std::invoke_result_t<Map&, I>, T> &&
    std::convertible_to<std::invoke_result_t<Reduce&, T, T>, T>
auto parallel_reduce(executor& ex, I first, I last, T init, Map&& map, Reduce&& reduce) -> T {
  std::ptrdiff_t const n = detail::index_count(first, last);
  if (n == 0) {
    return init;
  }
  auto body = [&]() -> T {
    return detail::reduce_range<T>(ex, detail::core_local(ex), first, n, 1,
                                   detail::initial_splitter(ex), map, reduce);
  };
  T total = detail::run_in_workers(ex, body, detail::loop_helpers(ex, n, 1));
  return std::invoke(reduce, std::move(init), std::move(total));
}

}  // namespace spindle
