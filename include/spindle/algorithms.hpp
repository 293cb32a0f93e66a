// SPDX-License-Identifier: BSL-1.0
#pragma once
// parallel_scan and parallel_sort over random-access ranges, on a spindle::executor.
//
// parallel_scan (inclusive prefix over an associative operation, like std::inclusive_scan):
// the two-pass block scan of Blelloch, "Prefix Sums and Their Applications" (CMU-CS-90-190,
// 1990), section 1.4 ("when there are fewer processors than elements"): the input is cut
// into blocks; pass 1 reduces every block but the last in parallel, a serial scan of the
// block sums gives each block its carry-in, and pass 2 scans every block from its carry-in
// in parallel, writing the output. The input is read twice and the output written once, so
// the output may be the input itself (d_first == first). Below 2 * scan_block_min elements,
// or on an executor of one worker, it is one serial loop on the calling thread.
//
// parallel_sort: a parallel quicksort (Hoare, "Quicksort", The Computer Journal 5(1), 1962)
// with the depth bound of introsort (Musser, "Introspective Sorting and Selection Algorithms",
// Software: Practice and Experience 27(8), 1997): each range is partitioned in place around a
// pseudo-median (Tukey's ninther on long ranges) and its two sides are sorted in parallel by
// spindle::join, down to leaves of about n / (8 * workers) elements that are sorted serially.
// In place, with swaps only: no buffer, no allocation (it is not a merge sort). Leaves are
// sorted by std::sort when the comparator is the standard less or greater on integers,
// enumerations or pointers (detail::trusted_order), and otherwise by an introsort built only
// of swaps and of insertions that put the element they hold back if the comparator throws.
// Not stable. Below sort_serial_cutoff elements, or on one worker, the range is sorted on the
// calling thread.
//
// A comparator that is not a strict weak order (`a <= b`, a coin toss) is a precondition
// violation that std::sort answers with reads and writes outside the range. Here every scan is
// bounded by the range, whatever comp answers: the result is then in no particular order, but
// it is a permutation of the input and nothing outside [first, last) is read or written.
//
// Exceptions: if op or comp throws, the call is cancelled (as parallel_for is, spindle/
// parallel.hpp): blocks, partitions and leaves that have not started are skipped, and a
// running serial loop stops at its next look at the call's failure flag (a scan block every
// detail::leaf_check_interval elements, a sort leaf before each of its partitions); then the
// exception propagates, after every task the call started has finished. parallel_scan leaves
// the output partly written. parallel_sort leaves the range a permutation of its elements
// (nothing lost, nothing duplicated): it only swaps, except in the guarded insertions.
//
// Allocation: parallel_scan allocates one array of block sums (at most 8 per worker);
// parallel_sort allocates nothing.
// Happens-before: everything the call did happens-before it returns.
// Example: tests/parallel_algorithms_test.cpp (Example).

#include <spindle/detail/sync/config.hpp>
#include <spindle/executor.hpp>
#include <spindle/parallel.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

namespace detail {

/// parallel_scan's smallest block: below two of them the scan runs serially.
inline constexpr std::size_t scan_block_min = 1 << 13;
/// parallel_scan's blocks per worker, for balance when some workers are busy elsewhere.
inline constexpr std::size_t scan_blocks_per_worker = 8;
/// parallel_sort's smallest leaf, and the length up to which it sorts serially.
inline constexpr std::size_t sort_leaf_min = 1 << 12;
inline constexpr std::size_t sort_serial_cutoff = 1 << 14;

// ---- parallel_scan ----

/// out[i] = carry op in[0] op ... op in[i] for i in [0, n) (no carry: in[0] op ... op in[i]).
/// Reads in[i] before it writes out[i], so out may be in. Looks at `failed` before every
/// leaf_check_interval elements, and stops (out partly written) once it is raised; raises it
/// if op throws.
template <class T, class In, class Out, class Op>
void scan_serial(In in, std::size_t n, Out out, Op& op, T const* carry, failure_flag& failed) {
  if (n == 0) {
    return;
  }
  raising_on_throw(failed, [&] {
    T acc =
        carry != nullptr ? static_cast<T>(std::invoke(op, T(*carry), *in)) : static_cast<T>(*in);
    *out = acc;
    for (std::size_t i = 1; i < n && !failed.raised();) {
      std::size_t const stop = n - i > leaf_check_interval ? i + leaf_check_interval : n;
      for (; i < stop; ++i) {
        acc = static_cast<T>(std::invoke(op, std::move(acc), in[i]));
        out[i] = acc;
      }
    }
  });
}

/// in[0] op ... op in[n - 1], in chunks as scan_serial. Once `failed` is raised it returns the
/// reduction of a prefix, which nobody reads: the exception that raised it ends the scan.
/// Preconditions: n >= 1.
template <class T, class In, class Op>
auto reduce_serial(In in, std::size_t n, Op& op, failure_flag& failed) -> T {
  return raising_on_throw(failed, [&] {
    T acc = static_cast<T>(*in);
    for (std::size_t i = 1; i < n && !failed.raised();) {
      std::size_t const stop = n - i > leaf_check_interval ? i + leaf_check_interval : n;
      for (; i < stop; ++i) {
        acc = static_cast<T>(std::invoke(op, std::move(acc), in[i]));
      }
    }
    return acc;
  });
}

template <class T, class In, class Out, class Op>
void scan(executor& ex, In first, std::size_t n, Out d_first, Op& op, T const* init,
          std::size_t block_min) {
  block_min = std::max<std::size_t>(block_min, 1);
  std::size_t const most_blocks = ex.size() * scan_blocks_per_worker;
  std::size_t const blocks = std::min(n / block_min, most_blocks);
  // One flag for the whole call: an exception of op in either pass stops the blocks of that
  // pass that have not started and the serial loops of those that have.
  failure_flag failed;
  if (blocks < 2 || ex.size() < 2) {
    scan_serial<T>(first, n, d_first, op, init, failed);
    return;
  }
  // sums[b]: the reduction of block b (pass 1), then of init and blocks 0 to b: the carry-in
  // of block b + 1 (pass 2). The last block needs no sum.
  auto sums = std::make_unique<std::optional<T>[]>(blocks - 1);
  auto start = [n, blocks](std::size_t b) { return block_start(n, blocks, b); };
  auto reduce_block = [&](std::size_t b) {
    sums[b].emplace(reduce_serial<T>(first + static_cast<std::iter_difference_t<In>>(start(b)),
                                     start(b + 1) - start(b), op, failed));
  };
  auto scan_block = [&](std::size_t b) {
    scan_serial<T>(first + static_cast<std::iter_difference_t<In>>(start(b)),
                   start(b + 1) - start(b),
                   d_first + static_cast<std::iter_difference_t<Out>>(start(b)), op,
                   b == 0 ? init : &*sums[b - 1], failed);
  };
  auto body = [&] {
    parallel_for_1d(ex, std::size_t{0}, blocks - 1, 1, reduce_block, adaptive_partitioner{},
                    failed);
    if (init != nullptr) {
      sums[0].emplace(static_cast<T>(std::invoke(op, T(*init), T(*sums[0]))));
    }
    for (std::size_t b = 1; b + 1 < blocks; ++b) {
      sums[b].emplace(static_cast<T>(std::invoke(op, T(*sums[b - 1]), T(*sums[b]))));
    }
    parallel_for_1d(ex, std::size_t{0}, blocks, 1, scan_block, adaptive_partitioner{}, failed);
  };
  run_in_workers(ex, body, std::min(ex.size(), blocks - 1));
}

// ---- parallel_sort ----

/// Whether Comp is the standard library's less or greater (std::ranges::less, std::less<>,
/// std::less<V>, and the same of greater) on V.
template <class Comp, class V>
inline constexpr bool standard_order =
    std::same_as<Comp, std::ranges::less> || std::same_as<Comp, std::ranges::greater> ||
    std::same_as<Comp, std::less<>> || std::same_as<Comp, std::greater<>> ||
    std::same_as<Comp, std::less<V>> || std::same_as<Comp, std::greater<V>>;

/// Whether Comp is a strict weak order on the elements of It by construction, and cannot throw:
/// the standard less or greater on integers, enumerations and pointers (not on floating point,
/// where a NaN breaks the order). Only then do the leaves use std::sort, whose unguarded scans
/// read outside the range for a comparator that is not a strict weak order; every other
/// comparator, a user's noexcept one included, takes the guarded introsort.
template <class It, class Comp>
inline constexpr bool trusted_order =
    standard_order<std::remove_cv_t<Comp>, std::iter_value_t<It>> &&
    (std::is_integral_v<std::iter_value_t<It>> || std::is_enum_v<std::iter_value_t<It>> ||
     std::is_pointer_v<std::iter_value_t<It>>);

/// Holds one element taken out of the range and puts it back into the current hole when it
/// goes out of scope, on the normal path and when the comparator throws alike.
template <class It>
struct hole_guard {
  std::iter_value_t<It> value;
  It hole;
  hole_guard(std::iter_value_t<It>&& v, It at) noexcept : value(std::move(v)), hole(at) {}
  hole_guard(hole_guard const&) = delete;
  auto operator=(hole_guard const&) -> hole_guard& = delete;
  ~hole_guard() { *hole = std::move(value); }
};

/// Insertion sort in which the element being inserted is never lost (hole_guard).
template <class It, class Comp>
void guarded_insertion_sort(It first, It last, Comp& comp) {
  if (last - first < 2) {
    return;
  }
  for (It i = first + 1; i != last; ++i) {
    if (!std::invoke(comp, *i, *(i - 1))) {
      continue;
    }
    hole_guard<It> g(std::move(*i), i);
    do {
      *g.hole = std::move(*(g.hole - 1));
      --g.hole;
    } while (g.hole != first && std::invoke(comp, g.value, *(g.hole - 1)));
  }
}

/// Sift-down of heap sort, with swaps only.
template <class It, class Comp>
void swap_sift_down(It first, std::ptrdiff_t i, std::ptrdiff_t n, Comp& comp) {
  for (;;) {
    std::ptrdiff_t child = 2 * i + 1;
    if (child >= n) {
      return;
    }
    if (child + 1 < n && std::invoke(comp, first[child], first[child + 1])) {
      ++child;
    }
    if (!std::invoke(comp, first[i], first[child])) {
      return;
    }
    std::iter_swap(first + i, first + child);
    i = child;
  }
}

template <class It, class Comp>
void swap_heap_sort(It first, It last, Comp& comp) {
  std::ptrdiff_t const n = last - first;
  for (std::ptrdiff_t i = n / 2; i-- > 0;) {
    swap_sift_down(first, i, n, comp);
  }
  for (std::ptrdiff_t end = n - 1; end > 0; --end) {
    std::iter_swap(first, first + end);
    swap_sift_down(first, 0, end, comp);
  }
}

/// Swaps the median of *a, *b, *c into *to.
template <class It, class Comp>
void median_to(It to, It a, It b, It c, Comp& comp) {
  if (std::invoke(comp, *a, *b)) {
    if (std::invoke(comp, *b, *c)) {
      std::iter_swap(to, b);
    } else if (std::invoke(comp, *a, *c)) {
      std::iter_swap(to, c);
    } else {
      std::iter_swap(to, a);
    }
  } else if (std::invoke(comp, *a, *c)) {
    std::iter_swap(to, a);
  } else if (std::invoke(comp, *b, *c)) {
    std::iter_swap(to, c);
  } else {
    std::iter_swap(to, b);
  }
}

/// Moves a pseudo-median of [first, last) to *first: the median of three (first + 1, the middle,
/// last - 1), or for long ranges Tukey's ninther (the median of the medians of three spread
/// triples). Either way the other candidates stay in [first + 1, last), one of them no less
/// than the pivot: the sentinel that bounds the partition's left scan.
template <class It, class Comp>
void pivot_to_first(It first, It last, Comp& comp) {
  auto const n = last - first;
  It const mid = first + n / 2;
  if (n > 1024) {
    auto const step = n / 8;
    median_to(first + 1, first + 1, first + 1 + step, first + 1 + 2 * step, comp);
    median_to(mid, mid - step, mid, mid + step, comp);
    median_to(last - 1, last - 1 - 2 * step, last - 1 - step, last - 1, comp);
  }
  median_to(first, first + 1, mid, last - 1, comp);
}

/// Hoare's partition of [first + 1, last) around the pivot *first, with swaps only: returns
/// cut in (first, last) such that, for a strict weak order, [first, cut) holds no element
/// greater than the pivot and [cut, last) none less. Elements equal to the pivot stop both
/// scans, so they spread over both sides (many duplicates still halve the range).
///
/// Both scans are bounded by the window [lo, hi) of elements not yet placed, not by the
/// sentinels a strict weak order would provide (Hoare's unguarded scans rely on the pivot
/// stopping the right scan and a candidate no less than it stopping the left one): a
/// comparator that is not a strict weak order (`a <= b`, a random answer) then gets some
/// order of the range's own elements, but never a read or a swap outside [first, last). The
/// bound is one comparison of two iterators per element, beside a call of comp.
///
/// Preconditions: pivot_to_first ran, on more than 16 elements.
template <class It, class Comp>
auto partition_at_first(It first, It last, Comp& comp) -> It {
  // The pivot waits in a local, where the compiler may keep it in a register (*first may
  // alias the elements the swaps write); the guard puts it back into *first on the way out,
  // also when comp throws, so the partition is still made of swaps only.
  hole_guard<It> pivot(std::move(*first), first);
  It lo = first + 1;
  It hi = last;
  // INVARIANT: [first + 1, lo) holds elements not greater than the pivot, [hi, last) elements
  // not less (for a strict weak order), and first + 1 <= lo <= hi <= last.
  for (;;) {
    while (lo != hi && std::invoke(comp, *lo, pivot.value)) {
      ++lo;
    }
    while (lo != hi && std::invoke(comp, pivot.value, *(hi - 1))) {
      --hi;
    }
    if (hi - lo < 2) {
      // Every element is placed, or one is left that stopped both scans (equal to the pivot,
      // at home on either side).
      break;
    }
    --hi;
    std::iter_swap(lo, hi);
    ++lo;
  }
  // For a strict weak order lo < last: pivot_to_first left a candidate no less than the pivot
  // in [first + 1, last), and the first left scan stops at or before it. A comparator that is
  // not an order may call every element less: keep the last one on the right, so that both
  // sides are shorter than the range.
  return lo == last ? lo - 1 : lo;
}

/// Introsort (Musser 1997) built of swaps and guarded insertions: if comp throws,
/// [first, last) is still a permutation of what it held. With `failed`, stops (leaving a
/// permutation) once it is raised, looking before each partition.
template <class It, class Comp>
void guarded_introsort(It first, It last, Comp& comp, int depth,
                       failure_flag const* failed = nullptr) {
  while (last - first > 16) {
    if (failed != nullptr && failed->raised()) {
      return;
    }
    if (depth == 0) {
      swap_heap_sort(first, last, comp);
      return;
    }
    --depth;
    pivot_to_first(first, last, comp);
    It const cut = partition_at_first(first, last, comp);
    guarded_introsort(cut, last, comp, depth, failed);
    last = cut;
  }
  guarded_insertion_sort(first, last, comp);
}

/// Sorts one leaf serially: std::sort for a trusted_order (the fastest, and it can neither
/// throw nor meet a comparator that breaks its scans), else guarded_introsort.
template <class It, class Comp>
void sort_leaf(It first, It last, Comp& comp, failure_flag const* failed = nullptr) {
  if constexpr (trusted_order<It, Comp>) {
    std::sort(first, last, comp);
  } else {
    int depth = 0;
    for (auto n = last - first; n > 1; n /= 2) {
      depth += 2;
    }
    guarded_introsort(first, last, comp, depth, failed);
  }
}

/// The parallel quicksort: partition, then sort both sides in parallel (spindle::join), down
/// to leaves of at most `leaf` elements sorted by sort_leaf. After `depth` levels (2 log2 n,
/// as introsort) a range is sorted as a leaf whatever its length: O(n log n) in every case.
/// Once `failed` is raised (comp threw), no partition or leaf starts and a running leaf stops
/// at its next partition; a partition under way finishes.
template <class It, class Comp>
void quick_sort(executor& ex, It first, It last, Comp& comp, std::size_t leaf, int depth,
                failure_flag& failed) {
  if (failed.raised()) {
    return;
  }
  // Partitioning needs three distinct candidates for its sentinel: more than 16 elements.
  if (static_cast<std::size_t>(last - first) <= std::max<std::size_t>(leaf, 16) || depth == 0) {
    raising_on_throw(failed, [&] { sort_leaf(first, last, comp, &failed); });
    return;
  }
  It const cut = raising_on_throw(failed, [&] {
    pivot_to_first(first, last, comp);
    return partition_at_first(first, last, comp);
  });
  auto left = [&] { quick_sort(ex, first, cut, comp, leaf, depth - 1, failed); };
  auto right = [&] { quick_sort(ex, cut, last, comp, leaf, depth - 1, failed); };
  static_cast<void>(spindle::join(ex, left, right));
}

template <class It, class Comp>
void sort(executor& ex, It first, It last, Comp& comp, std::size_t leaf_min,
          std::size_t serial_cutoff) {
  auto const n = static_cast<std::size_t>(std::max<std::iter_difference_t<It>>(last - first, 0));
  if (n < 2) {
    return;
  }
  if (n <= serial_cutoff || ex.size() < 2) {
    sort_leaf(first, last, comp);
    return;
  }
  // Leaves: about 8 per worker, so that a busy worker's share is picked up by the others, and
  // never shorter than leaf_min.
  std::size_t const leaf = std::max<std::size_t>({leaf_min, n / (8 * ex.size()), 1});
  int depth = 0;
  for (std::size_t k = n; k > 1; k /= 2) {
    depth += 2;
  }
  failure_flag failed;
  auto body = [&] { quick_sort(ex, first, last, comp, leaf, depth, failed); };
  run_in_workers(ex, body, std::min(ex.size(), n / leaf));
}

}  // namespace detail

/// Writes the inclusive prefix reduction of [first, last) to [d_first, d_first + n), like
/// std::inclusive_scan: d_first[i] = first[0] op first[1] op ... op first[i], and returns
/// d_first + n. `op` must be associative (it need not be commutative: operands keep their
/// order); it is called from several threads at once. The output may be the input
/// (d_first == first) but must not otherwise overlap it. n = 0 writes nothing.
///
/// Requirements: T = std::iter_value_t<In> is copyable, and op(T, *first) and op(T, T) convert
/// to T.
/// Thread safety: any thread. Throws: whatever op or the copies of T throw (the output is then
/// partly written); std::bad_alloc; std::logic_error after shutdown (called from outside).
template <std::random_access_iterator In, std::random_access_iterator Out, class Op>
requires std::copyable<std::iter_value_t<In>> &&
         std::indirectly_writable<Out, std::iter_value_t<In> const&> &&
         std::convertible_to<
             std::invoke_result_t<Op&, std::iter_value_t<In>, std::iter_reference_t<In>>,
             std::iter_value_t<In>> &&
         std::convertible_to<
             std::invoke_result_t<Op&, std::iter_value_t<In>, std::iter_value_t<In>>,
             std::iter_value_t<In>>
auto parallel_scan(executor& ex, In first, In last, Out d_first, Op op) -> Out {
  using T = std::iter_value_t<In>;
  auto const n = static_cast<std::size_t>(detail::index_count(first, last));
  detail::scan<T>(ex, first, n, d_first, op, static_cast<T const*>(nullptr),
                  detail::scan_block_min);
  return d_first + static_cast<std::iter_difference_t<Out>>(n);
}

/// As above with `init` in front: d_first[i] = init op first[0] op ... op first[i]. The
/// accumulator type is T (the type of init), as in std::inclusive_scan; T is copyable, the
/// elements convert to T, and op(T, *first) and op(T, T) convert to T.
template <std::random_access_iterator In, std::random_access_iterator Out, class Op, class T>
requires std::copyable<T> && std::indirectly_writable<Out, T const&> &&
         std::convertible_to<std::iter_reference_t<In>, T> &&
         std::convertible_to<std::invoke_result_t<Op&, T, std::iter_reference_t<In>>, T> &&
         std::convertible_to<std::invoke_result_t<Op&, T, T>, T>
auto parallel_scan(executor& ex, In first, In last, Out d_first, Op op, T init) -> Out {
  auto const n = static_cast<std::size_t>(detail::index_count(first, last));
  detail::scan<T>(ex, first, n, d_first, op, &init, detail::scan_block_min);
  return d_first + static_cast<std::iter_difference_t<Out>>(n);
}

/// Sorts [first, last) by `comp` (a strict weak order), in parallel: a quicksort in place (see
/// the top of this file), with no buffer. Not stable. Works on any random-access iterator:
/// pointers, std::vector's, std::deque's. A comp that is not a strict weak order leaves the
/// range in an unspecified order, still a permutation of its elements, and touches nothing
/// outside it.
///
/// Requirements: std::sortable<It, Comp>; the element type is nothrow move-constructible and
/// nothrow move-assignable (so that a swap cannot fail half-way).
/// Thread safety: any thread. Throws: whatever comp throws (the range then holds a permutation
/// of its elements); std::logic_error after shutdown (called from outside, above the serial
/// cutoff; nothing has moved then).
template <std::random_access_iterator It, class Comp = std::ranges::less>
requires std::sortable<It, Comp> && std::is_nothrow_move_constructible_v<std::iter_value_t<It>> &&
         std::is_nothrow_move_assignable_v<std::iter_value_t<It>>
void parallel_sort(executor& ex, It first, It last, Comp comp = {}) {
  detail::sort(ex, first, last, comp, detail::sort_leaf_min, detail::sort_serial_cutoff);
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE
