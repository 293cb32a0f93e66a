// SPDX-License-Identifier: BSL-1.0
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
// The grain of the overloads that take none: about n / (128 * workers), at least 1, so that
// the splitter stops at about 128 to 256 leaves a worker. oneTBB's auto_partitioner bounds its
// leaves the same way, more coarsely (oneTBB include/oneapi/tbb/partitioner.h: one range per
// thread, each split into at most 2^5 by its range pool, one level more for each steal).
// Without a bound, every steal restarts the splitter's budget, and with many workers hungry at
// once a range is cut down to single indices at its end, which on a 16-core machine made the
// grain-1 loop much slower than a coarser grain, and slower at 16 workers than at 8. The
// factor 128 puts the 16-core case near the grain measured best there and keeps the last
// leaf's imbalance small on two workers (docs/performance.md, "The automatic grain"). A body
// whose cost varies a lot from index to index can still ask for grain 1.
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
// Exceptions: if f (or map/reduce) throws, the call is cancelled, as oneTBB cancels a loop
// whose body threw: the throwing branch unwinds, and every other branch stops splitting and
// skips each leaf it has not started, and a leaf loop that is running stops at its next
// check of the call's failure flag (detail::failure_flag: before every leaf_check_interval
// calls of f or map), so that even [0, UINT64_MAX) returns at once. A body call that has
// started always finishes. The exception propagates to the caller after every branch has
// returned (when several calls throw before they see the flag, one of their exceptions does,
// and the others are destroyed). No index is visited twice.
//
// Partitioners: the last argument of parallel_for and parallel_reduce may be a partitioner tag.
// spindle::adaptive_partitioner{} (the default, the splitter above) or
// spindle::static_partitioner{}: the range is cut up front into min(workers, ceil(n / grain))
// contiguous blocks of equal length (lengths differ by at most one), each run as one serial
// loop and never split further; idle workers steal whole blocks (oneTBB's static_partitioner,
// without its thread affinity). Static suits uniform bodies whose per-index cost is tiny; the
// adaptive splitter suits everything else.
//
// 2-D: parallel_for(ex, blocked_range2d<I>{rows_first, rows_last, cols_first, cols_last,
// row_grain, col_grain}, f) calls f(block) with sub-blocks (a blocked_range2d itself) that
// tile the rows x columns rectangle, so the inner loop over a block's columns is a plain loop
// the compiler can vectorise. A range splits along the dimension with more grains in it.
//
// Happens-before: every call of f happens-before parallel_for returns.
// Example: tests/parallel_test.cpp (Example), tests/parallel_algorithms_test.cpp (Example).

#include <spindle/detail/executor/executor_core.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/executor.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
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

/// The default partitioner: rayon's adaptive splitter (see the top of this file).
struct adaptive_partitioner {};

/// One contiguous block per worker, no splitting of a block (see the top of this file).
struct static_partitioner {};

/// A partitioner tag: the optional last argument of parallel_for and parallel_reduce.
template <class P>
concept partitioner = std::same_as<std::remove_cvref_t<P>, adaptive_partitioner> ||
                      std::same_as<std::remove_cvref_t<P>, static_partitioner>;

/// A rectangle of indices [rows_first, rows_last) x [cols_first, cols_last) for the 2-D
/// parallel_for, and the sub-blocks it passes to its body. A dimension no longer than its
/// grain (0 counts as 1) is never split. A rectangle with an empty or reversed dimension is
/// empty.
template <parallel_index I>
struct blocked_range2d {
  I rows_first;
  I rows_last;
  I cols_first;
  I cols_last;
  std::size_t row_grain = 1;
  std::size_t col_grain = 1;
};

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
requires(!std::integral<I> && std::integral<std::iter_difference_t<I>>)
struct loop_count<I> {
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

/// One parallel call's record that a call of its body (f, map, reduce, op, comparator) threw:
/// the other branches of the call then stop splitting and skip the leaves and leaf chunks
/// they have not started. One lives on the stack of each parallel_for, parallel_reduce,
/// parallel_scan and parallel_sort call, so a failure cancels its own call only (a loop nested
/// in a body has a flag of its own, and its exception raises the outer flag only if it
/// leaves the outer body).
///
/// Synchronization:
///   failed_  written false -> true (never back) by any branch of the call whose body threw,
///            just before the exception leaves that branch; read by every branch before each
///            split, each leaf and each leaf chunk. It carries no data: the exception and
///            what the failed body wrote reach the caller through the join that the
///            exception passes on its way out (the completion of join's stack job, or of
///            run_as_root), whatever this flag says.
class failure_flag {
 public:
  /// Whether a body of this call has thrown.
  [[nodiscard]] auto raised() const noexcept -> bool {
    // relaxed: pairs with nothing. A reader acts on true only by skipping work, whose results
    // are discarded since an exception is on its way to the caller, and the skipped branch
    // returns through join's completion, which orders everything it did. A stale false costs
    // one more chunk; the store becomes visible in finite time ([atomics.order]/11), so every
    // branch stops within a chunk of seeing it.
    return failed_.load(std::memory_order_relaxed);
  }

  /// Records that a body of this call threw.
  void raise() noexcept {
    // relaxed: see raised(); the exception itself is published by join's completion.
    failed_.store(true, std::memory_order_relaxed);
  }

 private:
  detail::atomic<bool> failed_{false};
};

/// How many calls of the body a leaf loop makes between two looks at its failure_flag: often
/// enough that a leaf of 2^63 indices stops soon after another branch failed, rarely enough
/// that the inner loop of a cheap body stays a plain counted loop (vectorisable, one relaxed
/// load of a line no one writes per interval).
inline constexpr std::size_t leaf_check_interval = 256;

/// Runs `fn()`; if it throws, raises `failed` and lets the exception go on.
template <class Fn>
auto raising_on_throw(failure_flag& failed, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (...) {
    failed.raise();
    throw;
  }
}

/// The serial part of a range: a plain counted loop, in chunks of leaf_check_interval calls
/// with a look at `failed` before each.
template <class I, class F>
void for_leaf(I first, loop_count_t<I> n, F& f, failure_flag& failed) {
  using count = loop_count_t<I>;
  raising_on_throw(failed, [&] {
    for (count i = 0; i < n && !failed.raised();) {
      count const stop = n - i > leaf_check_interval ? i + leaf_check_interval : n;
      for (; i < stop; ++i) {
        std::invoke(f, index_at(first, i));
      }
    }
  });
}

/// The adaptive splitter over [first, first + n): calls leaf(lo, k) for each serial stretch
/// [lo, lo + k) it keeps, unless `failed` was raised first.
template <class I, class Leaf>
void for_range(executor& ex, worker_ctx* parent, I first, loop_count_t<I> n, loop_count_t<I> grain,
               splitter sp, failure_flag const& failed, Leaf& leaf) {
  if (failed.raised()) {
    return;
  }
  bool const migrated = core_local(ex) != parent;
  if (n > grain && sp.try_split(migrated)) {
    auto const half = n / 2;
    worker_ctx* const here = core_local(ex);
    auto left = [&] { for_range(ex, here, first, half, grain, sp, failed, leaf); };
    auto right = [&] {
      for_range(ex, here, index_at(first, half), n - half, grain, sp, failed, leaf);
    };
    static_cast<void>(spindle::join(ex, left, right));
    return;
  }
  leaf(first, n);
}

/// The serial part of a reduction, in chunks as for_leaf; empty (nullopt) if it stopped for
/// `failed`. The accumulator lives in a std::optional and each step constructs the next one in
/// place (emplace) instead of assigning it, so that T need only be move-constructible.
/// static_cast<T> makes the step's result a distinct object before emplace destroys the old
/// accumulator, in case `reduce` returns a reference to its first argument; for a result that
/// already is a T prvalue it is the same object (no extra move).
template <class T, class I, class Map, class Reduce>
auto reduce_leaf(I first, loop_count_t<I> n, Map& map, Reduce& reduce, failure_flag& failed)
    -> std::optional<T> {
  using count = loop_count_t<I>;
  return raising_on_throw(failed, [&] {
    std::optional<T> acc(std::in_place, std::invoke(map, first));
    count i = 1;
    while (i < n && !failed.raised()) {
      count const stop = n - i > leaf_check_interval ? i + leaf_check_interval : n;
      for (; i < stop; ++i) {
        acc.emplace(static_cast<T>(
            std::invoke(reduce, std::move(*acc), std::invoke(map, index_at(first, i)))));
      }
    }
    if (i < n) {
      acc.reset();  // stopped early
    }
    return acc;
  });
}

/// reduce(l, r) for two partial results; empty if either is, which happens only when a branch
/// stopped for `failed` (the exception that raised it then discards the result).
template <class T, class Reduce>
auto combine(std::optional<T>& l, std::optional<T>& r, Reduce& reduce, failure_flag& failed)
    -> std::optional<T> {
  std::optional<T> out;
  if (l && r) {
    raising_on_throw(failed, [&] {
      out.emplace(static_cast<T>(std::invoke(reduce, std::move(*l), std::move(*r))));
    });
  }
  return out;
}

/// The adaptive splitter of a reduction: reduces leaf(lo, k), a std::optional<T>, over each
/// serial stretch [lo, lo + k) it keeps, in order; empty when `failed` stopped a part.
template <class T, class I, class Leaf, class Reduce>
auto reduce_range(executor& ex, worker_ctx* parent, I first, loop_count_t<I> n,
                  loop_count_t<I> grain, splitter sp, failure_flag& failed, Leaf& leaf,
                  Reduce& reduce) -> std::optional<T> {
  if (failed.raised()) {
    return std::nullopt;
  }
  bool const migrated = core_local(ex) != parent;
  if (n > grain && sp.try_split(migrated)) {
    auto const half = n / 2;
    worker_ctx* const here = core_local(ex);
    auto left = [&]() -> std::optional<T> {
      return reduce_range<T>(ex, here, first, half, grain, sp, failed, leaf, reduce);
    };
    auto right = [&]() -> std::optional<T> {
      return reduce_range<T>(ex, here, index_at(first, half), n - half, grain, sp, failed, leaf,
                             reduce);
    };
    auto [l, r] = spindle::join(ex, left, right);
    return combine<T>(l, r, reduce, failed);
  }
  return leaf(first, n);
}

/// The offset of block `b` when `n` indices are cut into `blocks` blocks of equal length (the
/// first n % blocks one longer): b * (n / blocks) + min(b, n % blocks), which never exceeds n,
/// so it cannot overflow. Preconditions: 1 <= blocks, b <= blocks.
template <class Count>
auto block_start(Count n, Count blocks, Count b) noexcept -> Count {
  return b * (n / blocks) + std::min(b, n % blocks);
}

/// How many pieces of at most `grain` indices `n` indices make: ceil(n / grain), with no
/// overflow at n = max. Preconditions: n >= 1, grain >= 1.
template <class Count>
auto piece_count(Count n, Count grain) noexcept -> Count {
  return (n - 1) / grain + 1;
}

/// The number of blocks of the static partitioner: one per worker, fewer when the range holds
/// fewer than that many grains. Preconditions: n >= 1, grain >= 1.
template <class Count>
auto static_block_count(executor& ex, Count n, Count grain) noexcept -> Count {
  return std::max<Count>(1, std::min<Count>(ex.size(), piece_count(n, grain)));
}

/// The static partitioner's parallel_for: blocks [b0, b1) of the `blocks` equal blocks of
/// [first, first + n), halved by block count; calls leaf(lo, k) for each block [lo, lo + k),
/// unless `failed` was raised first.
template <class I, class Leaf>
void for_static(executor& ex, I first, loop_count_t<I> n, loop_count_t<I> blocks,
                loop_count_t<I> b0, loop_count_t<I> b1, failure_flag const& failed, Leaf& leaf) {
  if (failed.raised()) {
    return;
  }
  if (b1 - b0 == 1) {
    auto const lo = block_start(n, blocks, b0);
    leaf(index_at(first, lo), block_start(n, blocks, b1) - lo);
    return;
  }
  auto const mid = b0 + (b1 - b0) / 2;
  auto left = [&] { for_static(ex, first, n, blocks, b0, mid, failed, leaf); };
  auto right = [&] { for_static(ex, first, n, blocks, mid, b1, failed, leaf); };
  static_cast<void>(spindle::join(ex, left, right));
}

/// The static partitioner's parallel_reduce; blocks as in for_static, reduced as in
/// reduce_range.
template <class T, class I, class Leaf, class Reduce>
auto reduce_static(executor& ex, I first, loop_count_t<I> n, loop_count_t<I> blocks,
                   loop_count_t<I> b0, loop_count_t<I> b1, failure_flag& failed, Leaf& leaf,
                   Reduce& reduce) -> std::optional<T> {
  if (failed.raised()) {
    return std::nullopt;
  }
  if (b1 - b0 == 1) {
    auto const lo = block_start(n, blocks, b0);
    return leaf(index_at(first, lo), block_start(n, blocks, b1) - lo);
  }
  auto const mid = b0 + (b1 - b0) / 2;
  auto left = [&]() -> std::optional<T> {
    return reduce_static<T>(ex, first, n, blocks, b0, mid, failed, leaf, reduce);
  };
  auto right = [&]() -> std::optional<T> {
    return reduce_static<T>(ex, first, n, blocks, mid, b1, failed, leaf, reduce);
  };
  auto [l, r] = spindle::join(ex, left, right);
  return combine<T>(l, r, reduce, failed);
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

/// One dimension of a 2-D range: its first index, its length and its grain.
template <class I>
struct axis {
  I first;
  loop_count_t<I> n;
  loop_count_t<I> grain;

  [[nodiscard]] auto pieces() const noexcept -> loop_count_t<I> { return piece_count(n, grain); }
  [[nodiscard]] auto splittable() const noexcept -> bool { return n > grain; }
  [[nodiscard]] auto head(loop_count_t<I> k) const noexcept -> axis { return {first, k, grain}; }
  [[nodiscard]] auto tail(loop_count_t<I> k) const noexcept -> axis {
    return {index_at(first, k), n - k, grain};
  }
  [[nodiscard]] auto last() const noexcept -> I { return index_at(first, n); }
};

/// Whether a 2-D range splits its rows (true) or its columns: the dimension with more grains
/// in it, of those that can split. Preconditions: at least one of them can.
template <class I>
auto split_rows(axis<I> const& rows, axis<I> const& cols) noexcept -> bool {
  if (!cols.splittable()) {
    return true;
  }
  return rows.splittable() && rows.pieces() >= cols.pieces();
}

/// One block of the 2-D loop: a single call of f, which raises `failed` if it throws.
template <class I, class F>
void for_leaf_2d(axis<I> const& rows, axis<I> const& cols, std::size_t row_grain,
                 std::size_t col_grain, F& f, failure_flag& failed) {
  blocked_range2d<I> const block{rows.first,  rows.last(), cols.first,
                                 cols.last(), row_grain,   col_grain};
  raising_on_throw(failed, [&] { std::invoke(f, block); });
}

/// The adaptive 2-D loop: halve the dimension split_rows picks while the splitter allows;
/// nothing more once `failed` is raised.
template <class I, class F>
void for_range_2d(executor& ex, worker_ctx* parent, axis<I> rows, axis<I> cols, splitter sp,
                  std::size_t row_grain, std::size_t col_grain, F& f, failure_flag& failed) {
  if (failed.raised()) {
    return;
  }
  bool const migrated = core_local(ex) != parent;
  if ((rows.splittable() || cols.splittable()) && sp.try_split(migrated)) {
    worker_ctx* const here = core_local(ex);
    bool const by_rows = split_rows(rows, cols);
    axis<I> const& cut = by_rows ? rows : cols;
    auto const half = cut.n / 2;
    axis<I> const lo = cut.head(half);
    axis<I> const hi = cut.tail(half);
    auto left = [&] {
      for_range_2d(ex, here, by_rows ? lo : rows, by_rows ? cols : lo, sp, row_grain, col_grain, f,
                   failed);
    };
    auto right = [&] {
      for_range_2d(ex, here, by_rows ? hi : rows, by_rows ? cols : hi, sp, row_grain, col_grain, f,
                   failed);
    };
    static_cast<void>(spindle::join(ex, left, right));
    return;
  }
  for_leaf_2d(rows, cols, row_grain, col_grain, f, failed);
}

/// The static 2-D loop: `blocks` blocks, halved by block count along the dimension
/// split_rows picks, at a whole number of grains in proportion to the block counts; nothing
/// more once `failed` is raised.
template <class I, class F>
void for_static_2d(executor& ex, axis<I> rows, axis<I> cols, loop_count_t<I> blocks,
                   std::size_t row_grain, std::size_t col_grain, F& f, failure_flag& failed) {
  if (failed.raised()) {
    return;
  }
  if (blocks < 2 || !(rows.splittable() || cols.splittable())) {
    for_leaf_2d(rows, cols, row_grain, col_grain, f, failed);
    return;
  }
  bool const by_rows = split_rows(rows, cols);
  axis<I> const& cut = by_rows ? rows : cols;
  auto const left_blocks = blocks / 2;
  // The left part gets its share of the pieces, at least one and at most all but one: both
  // parts are non-empty, and only the last piece of a dimension is shorter than its grain.
  using count = loop_count_t<I>;
  count const pieces = cut.pieces();
  count const left_pieces =
      std::clamp<count>(block_start(pieces, blocks, left_blocks), 1, pieces - 1);
  axis<I> const lo = cut.head(left_pieces * cut.grain);
  axis<I> const hi = cut.tail(left_pieces * cut.grain);
  auto left = [&] {
    for_static_2d(ex, by_rows ? lo : rows, by_rows ? cols : lo, left_blocks, row_grain, col_grain,
                  f, failed);
  };
  auto right = [&] {
    for_static_2d(ex, by_rows ? hi : rows, by_rows ? cols : hi, blocks - left_blocks, row_grain,
                  col_grain, f, failed);
  };
  static_cast<void>(spindle::join(ex, left, right));
}

/// a * b, or the largest Count when the product does not fit.
template <class Count>
auto saturating_product(Count a, Count b) noexcept -> Count {
  constexpr Count most = std::numeric_limits<Count>::max();
  return a != 0 && b > most / a ? most : a * b;
}

/// How many leaves a worker the automatic grain aims at (see the top of this file).
inline constexpr std::size_t automatic_leaves_per_worker = 128;

/// The grain of the overloads that take none: n / (128 * workers), at least 1 and at most
/// SIZE_MAX.
template <parallel_index I>
auto automatic_grain(executor& ex, I first, I last) -> std::size_t {
  using count = loop_count_t<I>;
  count const n = index_count(first, last);
  count const leaves = saturating_product<count>(ex.size(), count{automatic_leaves_per_worker});
  count const g = n / leaves;
  if (g == 0) {
    return 1;
  }
  return g > count{std::numeric_limits<std::size_t>::max()}
             ? std::numeric_limits<std::size_t>::max()
             : static_cast<std::size_t>(g);
}

/// Cuts [first, last) as partitioner P says, and calls leaf(lo, k) for each serial stretch
/// [lo, lo + k) of the cut, in parallel (from a worker in place, from another thread as a
/// guest or injected: run_in_workers); no leaf starts once `failed` is raised. parallel_for's
/// leaves loop over the body; the tests pass leaves that record where the cut falls.
template <parallel_index I, class Leaf, class P>
void for_each_leaf(executor& ex, I first, I last, std::size_t grain, failure_flag const& failed,
                   Leaf& leaf, P) {
  using count = loop_count_t<I>;
  count const n = index_count(first, last);
  if (n == 0) {
    return;
  }
  // count is at least as wide as std::size_t, so every grain fits.
  count const g = grain == 0 ? 1 : grain;
  if constexpr (std::same_as<P, static_partitioner>) {
    count const blocks = static_block_count(ex, n, g);
    auto body = [&] { for_static(ex, first, n, blocks, count{0}, blocks, failed, leaf); };
    run_in_workers(ex, body, static_cast<std::size_t>(blocks - 1));
  } else {
    auto body = [&] {
      for_range(ex, core_local(ex), first, n, g, initial_splitter(ex), failed, leaf);
    };
    run_in_workers(ex, body, loop_helpers(ex, n, g));
  }
}

/// parallel_for cancelled by `failed`, which f's exceptions raise: the loop of
/// parallel_scan's passes shares the flag of its scan.
template <parallel_index I, class F, class P>
void parallel_for_1d(executor& ex, I first, I last, std::size_t grain, F& f, P part,
                     failure_flag& failed) {
  auto leaf = [&f, &failed](I lo, loop_count_t<I> k) { for_leaf(lo, k, f, failed); };
  for_each_leaf(ex, first, last, grain, failed, leaf, part);
}

/// As for_each_leaf for a reduction: reduces leaf(lo, k), a std::optional<T>, over the serial
/// stretches of the cut, in order. Empty when the range is, or when `failed` stopped a part
/// (an exception then propagates instead).
template <class T, parallel_index I, class Leaf, class Reduce, class P>
auto reduce_each_leaf(executor& ex, I first, I last, std::size_t grain, failure_flag& failed,
                      Leaf& leaf, Reduce& reduce, P) -> std::optional<T> {
  using count = loop_count_t<I>;
  count const n = index_count(first, last);
  if (n == 0) {
    return std::nullopt;
  }
  count const g = grain == 0 ? 1 : grain;
  if constexpr (std::same_as<P, static_partitioner>) {
    count const blocks = static_block_count(ex, n, g);
    auto body = [&]() -> std::optional<T> {
      return reduce_static<T>(ex, first, n, blocks, count{0}, blocks, failed, leaf, reduce);
    };
    return run_in_workers(ex, body, static_cast<std::size_t>(blocks - 1));
  } else {
    auto body = [&]() -> std::optional<T> {
      return reduce_range<T>(ex, core_local(ex), first, n, g, initial_splitter(ex), failed, leaf,
                             reduce);
    };
    return run_in_workers(ex, body, loop_helpers(ex, n, g));
  }
}

template <class T, parallel_index I, class Map, class Reduce, class P>
auto parallel_reduce_1d(executor& ex, I first, I last, std::size_t grain, T& init, Map& map,
                        Reduce& reduce, P part) -> T {
  check_not_null(map, "spindle::parallel_reduce: map is a null pointer");
  check_not_null(reduce, "spindle::parallel_reduce: reduce is a null pointer");
  if (index_count(first, last) == 0) {
    return std::move(init);
  }
  failure_flag failed;
  auto leaf = [&map, &reduce, &failed](I lo, loop_count_t<I> k) -> std::optional<T> {
    return reduce_leaf<T>(lo, k, map, reduce, failed);
  };
  std::optional<T> total = reduce_each_leaf<T>(ex, first, last, grain, failed, leaf, reduce, part);
  // A part is empty only after a call threw, and that exception has left run_in_workers.
  SPINDLE_ASSERT(total.has_value(), "parallel_reduce lost a partial result");
  return std::invoke(reduce, std::move(init), std::move(*total));
}

}  // namespace detail

/// Calls `f(i)` for every i in [first, last), in parallel, never splitting a range shorter
/// than `grain` (grain 0 counts as 1; a grain at least the length of the range, up to
/// SIZE_MAX, runs one serial loop on the calling thread). An empty or reversed range
/// (first >= last) calls nothing. `part` picks how the range is cut (see the top of this
/// file); the overloads without it use adaptive_partitioner, those without a grain the
/// automatic grain.
///
/// Thread safety: any thread. Throws: whatever f throws; std::invalid_argument if f is a null
/// pointer to function or member; std::logic_error after shutdown (called from outside the
/// workers).
template <parallel_index I, class F, partitioner P>
requires std::invocable<F&, I>
void parallel_for(executor& ex, I first, I last, std::size_t grain, F&& f, P part) {
  detail::check_not_null(f, "spindle::parallel_for: f is a null pointer");
  detail::failure_flag failed;
  detail::parallel_for_1d(ex, first, last, grain, f, part, failed);
}

/// parallel_for with the adaptive partitioner.
template <parallel_index I, class F>
requires std::invocable<F&, I>
void parallel_for(executor& ex, I first, I last, std::size_t grain, F&& f) {
  parallel_for(ex, first, last, grain, std::forward<F>(f), adaptive_partitioner{});
}

/// parallel_for with the automatic grain (about n / (128 * workers), see the top of this
/// file) and partitioner `part`.
template <parallel_index I, class F, partitioner P>
requires std::invocable<F&, I>
void parallel_for(executor& ex, I first, I last, F&& f, P part) {
  parallel_for(ex, first, last, detail::automatic_grain(ex, first, last), std::forward<F>(f), part);
}

/// parallel_for with the automatic grain and the adaptive partitioner.
template <parallel_index I, class F>
requires std::invocable<F&, I>
void parallel_for(executor& ex, I first, I last, F&& f) {
  parallel_for(ex, first, last, detail::automatic_grain(ex, first, last), std::forward<F>(f),
               adaptive_partitioner{});
}

/// The 2-D loop: calls `f(block)` for sub-blocks (blocked_range2d<I> values, with the grains of
/// `range`) that together cover every (row, column) of `range` exactly once, in parallel. No
/// block is split along a dimension no longer than its grain. With adaptive_partitioner
/// (the default) the rectangle is halved along the dimension with more grains while the
/// adaptive splitter allows; with static_partitioner it is cut into at most one block per
/// worker. An empty or reversed dimension calls nothing.
///
/// Thread safety: any thread. Throws: whatever f throws; std::invalid_argument if f is a null
/// pointer to function or member; std::logic_error after shutdown (called from outside).
template <parallel_index I, class F, partitioner P>
requires std::invocable<F&, blocked_range2d<I> const&>
void parallel_for(executor& ex, blocked_range2d<I> const& range, F&& f, P) {
  detail::check_not_null(f, "spindle::parallel_for: f is a null pointer");
  using count = detail::loop_count_t<I>;
  count const rows_n = detail::index_count(range.rows_first, range.rows_last);
  count const cols_n = detail::index_count(range.cols_first, range.cols_last);
  if (rows_n == 0 || cols_n == 0) {
    return;
  }
  // The blocks carry the grains as given; the splitting counts a grain of 0 as 1.
  std::size_t const row_grain = range.row_grain;
  std::size_t const col_grain = range.col_grain;
  detail::axis<I> const rows{range.rows_first, rows_n, std::max<count>(row_grain, 1)};
  detail::axis<I> const cols{range.cols_first, cols_n, std::max<count>(col_grain, 1)};
  count const pieces = detail::saturating_product(rows.pieces(), cols.pieces());
  detail::failure_flag failed;
  if constexpr (std::same_as<P, static_partitioner>) {
    count const blocks = std::min<count>(ex.size(), pieces);
    auto body = [&] {
      detail::for_static_2d(ex, rows, cols, blocks, row_grain, col_grain, f, failed);
    };
    detail::run_in_workers(ex, body, static_cast<std::size_t>(blocks - 1));
  } else {
    auto body = [&] {
      detail::for_range_2d(ex, detail::core_local(ex), rows, cols, detail::initial_splitter(ex),
                           row_grain, col_grain, f, failed);
    };
    detail::run_in_workers(ex, body, detail::loop_helpers(ex, pieces, count{1}));
  }
}

/// The 2-D loop with the adaptive partitioner.
template <parallel_index I, class F>
requires std::invocable<F&, blocked_range2d<I> const&>
void parallel_for(executor& ex, blocked_range2d<I> const& range, F&& f) {
  parallel_for(ex, range, std::forward<F>(f), adaptive_partitioner{});
}

/// Returns reduce(init, reduce(map(first), ..., map(last - 1))), with the automatic grain and
/// the adaptive partitioner, grouping the reduce calls in an unspecified way: `reduce` must be
/// associative (not necessarily commutative: the order of the elements is kept). `init` is used
/// once; an empty range returns `init`. T need only be move-constructible: partial results are
/// never assigned, only constructed and destroyed, each exactly once, also when map or reduce
/// throws.
///
/// Thread safety: any thread. Throws: whatever map or reduce throws; std::invalid_argument if
/// map or reduce is a null pointer to function or member; std::logic_error after shutdown
/// (called from outside the workers).
template <parallel_index I, class T, class Map, class Reduce>
requires std::invocable<Map&, I> && std::move_constructible<T> &&
         std::convertible_to<std::invoke_result_t<Map&, I>, T> &&
         std::convertible_to<std::invoke_result_t<Reduce&, T, T>, T>
auto parallel_reduce(executor& ex, I first, I last, T init, Map&& map, Reduce&& reduce) -> T {
  return detail::parallel_reduce_1d<T>(ex, first, last, detail::automatic_grain(ex, first, last),
                                       init, map, reduce, adaptive_partitioner{});
}

/// parallel_reduce that never splits a range of `grain` indices or fewer (grain 0 counts as 1;
/// a grain at least the length of the range, up to SIZE_MAX, maps and reduces every index on
/// the calling thread, in order) and cuts the range as `part` says (see the top of this
/// file). The same contract otherwise.
template <parallel_index I, class T, class Map, class Reduce, partitioner P>
requires std::invocable<Map&, I> && std::move_constructible<T> &&
         std::convertible_to<std::invoke_result_t<Map&, I>, T> &&
         std::convertible_to<std::invoke_result_t<Reduce&, T, T>, T>
auto parallel_reduce(executor& ex, I first, I last, std::size_t grain, T init, Map&& map,
                     Reduce&& reduce, P part) -> T {
  return detail::parallel_reduce_1d<T>(ex, first, last, grain, init, map, reduce, part);
}

/// parallel_reduce with a grain and the adaptive partitioner.
template <parallel_index I, class T, class Map, class Reduce>
requires std::invocable<Map&, I> && std::move_constructible<T> &&
         std::convertible_to<std::invoke_result_t<Map&, I>, T> &&
         std::convertible_to<std::invoke_result_t<Reduce&, T, T>, T>
auto parallel_reduce(executor& ex, I first, I last, std::size_t grain, T init, Map&& map,
                     Reduce&& reduce) -> T {
  return detail::parallel_reduce_1d<T>(ex, first, last, grain, init, map, reduce,
                                       adaptive_partitioner{});
}

/// parallel_reduce with the automatic grain (see the top of this file) and partitioner
/// `part`.
template <parallel_index I, class T, class Map, class Reduce, partitioner P>
requires std::invocable<Map&, I> && std::move_constructible<T> &&
         std::convertible_to<std::invoke_result_t<Map&, I>, T> &&
         std::convertible_to<std::invoke_result_t<Reduce&, T, T>, T>
auto parallel_reduce(executor& ex, I first, I last, T init, Map&& map, Reduce&& reduce, P part)
    -> T {
  return detail::parallel_reduce_1d<T>(ex, first, last, detail::automatic_grain(ex, first, last),
                                       init, map, reduce, part);
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE
