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
// In place, with swaps only: no buffer, no allocation. Leaves are sorted by std::sort when the
// comparator cannot throw (noexcept), and otherwise by an introsort built only of swaps and of
// insertions that put the element they hold back if the comparator throws. Not stable. Below
// sort_serial_cutoff elements, or on one worker, the range is sorted on the calling thread.
//
// Exceptions: if op or comp throws, the exception propagates after every task the call
// started has finished. parallel_scan leaves the output partly written. parallel_sort leaves
// the range a permutation of its elements (nothing lost, nothing duplicated): it only swaps,
// except in the guarded insertions.
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
/// Reads in[i] before it writes out[i], so out may be in.
template <class T, class In, class Out, class Op>
void scan_serial(In in, std::size_t n, Out out, Op& op, T const* carry) {
  if (n == 0) {
    return;
  }
  T acc = carry != nullptr ? static_cast<T>(std::invoke(op, T(*carry), *in)) : static_cast<T>(*in);
  *out = acc;
  for (std::size_t i = 1; i < n; ++i) {
    acc = static_cast<T>(std::invoke(op, std::move(acc), in[i]));
    out[i] = acc;
  }
}

/// in[0] op ... op in[n - 1]. Preconditions: n >= 1.
template <class T, class In, class Op>
auto reduce_serial(In in, std::size_t n, Op& op) -> T {
  T acc = static_cast<T>(*in);
  for (std::size_t i = 1; i < n; ++i) {
    acc = static_cast<T>(std::invoke(op, std::move(acc), in[i]));
  }
  return acc;
}

template <class T, class In, class Out, class Op>
void scan(executor& ex, In first, std::size_t n, Out d_first, Op& op, T const* init,
          std::size_t block_min) {
  block_min = std::max<std::size_t>(block_min, 1);
  std::size_t const most_blocks = ex.size() * scan_blocks_per_worker;
  std::size_t const blocks = std::min(n / block_min, most_blocks);
  if (blocks < 2 || ex.size() < 2) {
    scan_serial<T>(first, n, d_first, op, init);
    return;
  }
  // sums[b]: the reduction of block b (pass 1), then of init and blocks 0 to b: the carry-in
  // of block b + 1 (pass 2). The last block needs no sum.
  auto sums = std::make_unique<std::optional<T>[]>(blocks - 1);
  auto start = [n, blocks](std::size_t b) { return block_start(n, blocks, b); };
  auto body = [&] {
    parallel_for(ex, std::size_t{0}, blocks - 1, [&](std::size_t b) {
      sums[b].emplace(reduce_serial<T>(first + static_cast<std::iter_difference_t<In>>(start(b)),
                                       start(b + 1) - start(b), op));
    });
    if (init != nullptr) {
      sums[0].emplace(static_cast<T>(std::invoke(op, T(*init), T(*sums[0]))));
    }
    for (std::size_t b = 1; b + 1 < blocks; ++b) {
      sums[b].emplace(static_cast<T>(std::invoke(op, T(*sums[b - 1]), T(*sums[b]))));
    }
    parallel_for(ex, std::size_t{0}, blocks, [&](std::size_t b) {
      scan_serial<T>(first + static_cast<std::iter_difference_t<In>>(start(b)),
                     start(b + 1) - start(b),
                     d_first + static_cast<std::iter_difference_t<Out>>(start(b)), op,
                     b == 0 ? init : &*sums[b - 1]);
    });
  };
  run_in_workers(ex, body, std::min(ex.size(), blocks - 1));
}

// ---- parallel_sort ----

/// Whether comparing two elements of It with Comp cannot throw: then the leaves use std::sort.
template <class It, class Comp>
inline constexpr bool nothrow_compare =
    std::is_nothrow_invocable_r_v<bool, Comp&, std::iter_reference_t<It>,
                                  std::iter_reference_t<It>>;

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
/// cut such that [first, cut) holds no element greater than the pivot and [cut, last) none
/// less, both non-empty. Elements equal to the pivot stop both scans, so they spread over
/// both sides (many duplicates still halve the range). Preconditions: pivot_to_first ran, on
/// more than 16 elements (so that its three candidates are distinct).
template <class It, class Comp>
auto partition_at_first(It first, It last, Comp& comp) -> It {
  It lo = first + 1;
  It hi = last;
  for (;;) {
    while (std::invoke(comp, *lo, *first)) {
      ++lo;
    }
    --hi;
    while (std::invoke(comp, *first, *hi)) {
      --hi;
    }
    if (!(lo < hi)) {
      return lo;
    }
    std::iter_swap(lo, hi);
    ++lo;
  }
}

/// Introsort (Musser 1997) built of swaps and guarded insertions: if comp throws,
/// [first, last) is still a permutation of what it held.
template <class It, class Comp>
void guarded_introsort(It first, It last, Comp& comp, int depth) {
  while (last - first > 16) {
    if (depth == 0) {
      swap_heap_sort(first, last, comp);
      return;
    }
    --depth;
    pivot_to_first(first, last, comp);
    It const cut = partition_at_first(first, last, comp);
    guarded_introsort(cut, last, comp, depth);
    last = cut;
  }
  guarded_insertion_sort(first, last, comp);
}

/// Sorts one leaf serially.
template <class It, class Comp>
void sort_leaf(It first, It last, Comp& comp) {
  if constexpr (nothrow_compare<It, Comp>) {
    std::sort(first, last, [&comp](auto&& a, auto&& b) -> bool {
      return std::invoke(comp, std::forward<decltype(a)>(a), std::forward<decltype(b)>(b));
    });
  } else {
    int depth = 0;
    for (auto n = last - first; n > 1; n /= 2) {
      depth += 2;
    }
    guarded_introsort(first, last, comp, depth);
  }
}

/// The parallel quicksort: partition, then sort both sides in parallel (spindle::join), down
/// to leaves of at most `leaf` elements sorted by sort_leaf. After `depth` levels (2 log2 n,
/// as introsort) a range is sorted as a leaf whatever its length: O(n log n) in every case.
template <class It, class Comp>
void quick_sort(executor& ex, It first, It last, Comp& comp, std::size_t leaf, int depth) {
  // Partitioning needs three distinct candidates for its sentinel: more than 16 elements.
  if (static_cast<std::size_t>(last - first) <= std::max<std::size_t>(leaf, 16) || depth == 0) {
    sort_leaf(first, last, comp);
    return;
  }
  pivot_to_first(first, last, comp);
  It const cut = partition_at_first(first, last, comp);
  auto left = [&] { quick_sort(ex, first, cut, comp, leaf, depth - 1); };
  auto right = [&] { quick_sort(ex, cut, last, comp, leaf, depth - 1); };
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
  auto body = [&] { quick_sort(ex, first, last, comp, leaf, depth); };
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
requires std::copyable<std::iter_value_t<In>> && std::indirectly_writable < Out,
    std::iter_value_t<In>
const& >
    &&std::convertible_to<
          std::invoke_result_t<Op&, std::iter_value_t<In>, std::iter_reference_t<In>>,
          std::iter_value_t<In>>&& std::
          convertible_to<std::invoke_result_t<Op&, std::iter_value_t<In>, std::iter_value_t<In>>,
                         std::iter_value_t<In>> auto
          parallel_scan(executor& ex, In first, In last, Out d_first, Op op) -> Out {
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
/// the top of this file). Not stable. Works on any random-access iterator: pointers,
/// std::vector's, std::deque's.
///
/// Requirements: std::sortable<It, Comp>; the element type is nothrow move-constructible and
/// nothrow move-assignable (so that a swap cannot fail half-way). A comparator declared
/// noexcept lets the leaves use std::sort.
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
