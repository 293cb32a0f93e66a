// SPDX-License-Identifier: BSL-1.0
#pragma once
// The shared state of one Chase-Lev work-stealing deque: the algorithm behind the handles
// `spindle::deque_owner<T>` and `spindle::stealer<T>` (<spindle/deque.hpp>, which states the
// public contract: thread safety, progress, happens-before, memory).
//
// Algorithm: Lê, Pop, Cohen, Zappa Nardelli, "Correct and Efficient Work-Stealing for Weak
// Memory Models" (PPoPP 2013, doi 10.1145/2442516.2442524): the growable deque of
// Chase and Lev (SPAA 2005) with C11 orderings proved correct, plus the three corrections that
// CDSChecker's benchmark suite found in the paper's code (chase-lev-deque-bugfix): push uses
// the buffer returned by the resize, the resize publishes the new buffer with a release store,
// and steal loads the buffer with acquire (not consume). Deviations from the paper:
//   - Every store of `bottom` is a release store, where the paper has a release fence in push
//     and relaxed stores: ThreadSanitizer does not model fences, and the release store gives
//     the same guarantee on the atomic itself (Taskflow: taskflow/core/wsq.hpp does the same).
//   - The owner never loads `bottom`: it keeps the value it last stored in an owner-private
//     field and reads that. bottom shares its line with top, which thieves write by CAS, so
//     the owner's load of it missed whenever a thief had just stolen, and a push (a load, then
//     stores) stalled on that miss; its stores now wait in the store buffer instead.
//   - The loads of `top` by the owner are acquire (or seq_cst), so that a thief's speculative
//     slot read is ordered before the owner overwrites that slot a lap later; the owner caches
//     `top` (Taskflow's `_cached_top`) and re-reads it only when the buffer looks full or it pops.
//   - When the owner's cached top says one item is left, pop takes it with a single CAS of
//     top, as a thief would, and skips the decrement of bottom (a locked exchange): a lone item is
//     both the top and the bottom one (argument at `pop_lifo`). A push+pop pair on an empty
//     deque then costs one CAS instead of an exchange plus a CAS.
//   - No fences: a thief loads top and bottom with seq_cst loads, and the owner's take
//     decrements bottom with a seq_cst exchange and loads top with seq_cst, where the paper
//     has a seq_cst fence between two accesses on each side. Under C++20 [atomics.order] p4
//     (P0668R5) four seq_cst operations give the same store-buffering fact as the two fences,
//     which is all the proof needs (argument at `load_top_then_bottom`). On x86 a seq_cst load
//     is a plain load, so a steal pays for no barrier besides its CAS, and the take pays one
//     locked instruction where a store and a fence cost two.
//   - FIFO owner pop and batch stealing (crossbeam-deque: src/deque.rs) are additions; their
//     correctness arguments are at `pop_fifo` and `take_batch` below.
//
// It reports takes from the top in the public `steal_result` (<spindle/deque_result.hpp>),
// which the handles return as they are.
//
// The line layout is a build-time setting, so that one measuring run on a many-core machine
// can compare both layouts side by side. It is a matter of speed, never of correctness: the
// protocol and every ordering are the same in both. Every translation unit of a program must
// see the same value (it shapes an inline class); the installed package uses the default.
//
//   SPINDLE_DEQUE_SPLIT_LINES   0 (default): top, bottom and the buffer pointer share one cache
//                               line (the layout of crossbeam-deque and xenium). 1: bottom on a
//                               line of its own, apart from top and the buffer pointer, as
//                               before the two were put together (bottom then shared the
//                               owner-private line; now that line holds only owner fields).

#include <spindle/deque_result.hpp>
#include <spindle/detail/deque/deque_buffer.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/cache_padded.hpp>
#include <spindle/detail/sync/config.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#ifndef SPINDLE_DEQUE_SPLIT_LINES
#define SPINDLE_DEQUE_SPLIT_LINES 0
#endif

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// Most items `steal_batch_and_pop` moves into the destination (one more is returned).
inline constexpr std::int64_t deque_max_batch = 32;

/// Largest capacity a deque grows to (2^40 slots): beyond it, growth throws std::bad_alloc.
inline constexpr std::size_t deque_max_capacity = std::size_t{1} << 40;

/// The shared state of one deque: the algorithm. `deque_owner` and `stealer` are handles to it.
///
/// Synchronization:
/// - `top`: written only by CAS (thieves, the owner's last-item LIFO pop, every FIFO pop), so
///   it never decreases and every write to it is a read-modify-write: its modification order
///   is one release sequence, and an acquire load of it synchronizes with every earlier CAS.
///   INVARIANT: a CAS t -> t+k succeeds only for the taker of positions [t, t+k).
/// - `bottom`: written only by the owner, always with a release store; read by thieves with
///   acquire. INVARIANT: top <= bottom except inside a LIFO pop, where bottom may be top-1
///   between the decrement and the restore.
/// - `buffer`: written only by the owner (release, when growing), read by thieves (acquire).
///   INVARIANT: the current buffer holds every position in [top, bottom); a retired buffer
///   still holds, unchanged, the positions it held when retired.
/// - owner-private (`owner_side::buffer`, `cached_top`, `bottom`, `retired_`): touched only by
///   the owner, and by the destructor, which runs after every handle released its reference.
///   INVARIANT: cached_top <= top (top never decreases and cached_top is a past value of it).
///   INVARIANT: owner_side::bottom equals the last value the owner stored to bottom.
/// - `refs_`: one per live handle; the handle that brings it to zero deletes the state.
template <class T>
class deque_state {
 public:
  deque_state(bool fifo, std::size_t capacity) : fifo_(fifo) {
    auto first = std::make_unique<deque_buffer<T>>(capacity);
    owner_.value.buffer = first.get();
    // relaxed: no other thread knows this state yet; handing a handle to another thread
    // needs a happens-before edge (thread start, a channel), which publishes this store.
    shared_.value.buffer.store(first.release(), std::memory_order_relaxed);
  }

  deque_state(deque_state const&) = delete;
  auto operator=(deque_state const&) -> deque_state& = delete;

  ~deque_state() {
    // SAFETY: the last handle is gone (refs_ reached zero with acq_rel, so every other
    // handle's accesses happen-before this), hence no thread can read the buffer any more.
    delete owner_.value.buffer;
  }

  void retain() noexcept {
    // relaxed: the caller already holds a reference, so the state cannot die meanwhile.
    refs_.fetch_add(1, std::memory_order_relaxed);
  }

  /// Drops one reference; deletes the state when it was the last.
  static void release(deque_state* state) noexcept {
    // acq_rel: release publishes this handle's last accesses; the acquire of the handle that
    // reaches zero pairs with every other handle's release, before it deletes the state.
    if (state->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete state;
    }
  }

  /// Whether the owner takes the oldest item (deque_order::fifo) rather than the newest.
  [[nodiscard]] auto fifo() const noexcept -> bool { return fifo_; }

  [[nodiscard]] auto owner_capacity() const noexcept -> std::size_t {
    return owner_.value.buffer->capacity();
  }

  [[nodiscard]] auto approximate_size() const noexcept -> std::size_t {
    // relaxed: a statistic; the two loads are not a snapshot (documented on size()).
    auto const t = shared_.value.top.load(std::memory_order_relaxed);
    // relaxed: as above.
    auto const b = shared_.value.bottom.load(std::memory_order_relaxed);
    return b > t ? static_cast<std::size_t>(b - t) : 0;
  }

  /// Owner only. Makes room for `n` more items so that writing them cannot allocate.
  /// Throws: std::bad_alloc (the deque is unchanged).
  void reserve_room(std::int64_t n) {
    auto const b = owner_.value.bottom;
    if (b + n - owner_.value.cached_top > capacity_of(owner_.value.buffer)) {
      make_room(b, n);
    }
  }

  /// Owner only. Lê et al. push, with the CDSChecker fix: write into the buffer grow made.
  SPINDLE_ALWAYS_INLINE void push(T value) {
    auto& own = owner_.value;
    auto const b = own.bottom;
    if (b - own.cached_top >= capacity_of(own.buffer)) [[unlikely]] {
      make_room(b, 1);
    }
    own.buffer->store(b, value);
    own.bottom = b + 1;
    // release: publishes the slot write above (and the caller's writes before push) to the
    // acquire load of bottom in steal()/steal_batch_and_pop(), which then reads the slot.
    shared_.value.bottom.store(b + 1, std::memory_order_release);
  }

  /// Owner only. Lê et al. take: claim the bottom item; only the last one is contended.
  SPINDLE_ALWAYS_INLINE auto pop_lifo() noexcept -> std::optional<T> {
    auto& own = owner_.value;
    auto const old_bottom = own.bottom;
    if (old_bottom <= own.cached_top) {
      return std::nullopt;  // top >= cached_top >= bottom: empty, nothing to undo.
    }
    auto const b = old_bottom - 1;
    if (b == own.cached_top) {
      // At most one item (top >= cached_top == bottom - 1), and a single item is the top one
      // as well as the bottom one: take it as a thief would, with one CAS of top and without
      // the locked decrement of bottom (a deviation from Lê et al., whose take always
      // decrements first). Every taker of position b claims it by a CAS from b, so exactly
      // one succeeds; bottom never moves, so no thief's view of it can go stale.
      auto t = b;
      // acq_rel: acquire pairs with the CAS of earlier takers, as the load of top below;
      // release as every write of top. Failure acquire: a thief took it, and the value it
      // wrote (b + 1) becomes cached_top, with the same pairing.
      if (shared_.value.top.compare_exchange_strong(t, b + 1, std::memory_order_acq_rel,
                                                    std::memory_order_acquire)) {
        own.cached_top = b + 1;
        return own.buffer->load(b);
      }
      own.cached_top = t;
      return std::nullopt;
    }
    // seq_cst exchange (Wb), then seq_cst load of top (Rt): the store->load order of Lê et
    // al.'s take, which the paper gets from a store and a fence. Pairs with the thieves'
    // seq_cst loads of top then bottom (load_top_then_bottom gives the C++20 argument): either
    // the thief sees the decremented bottom or we see its advanced top, so both cannot take
    // position b. An exchange rather than store + fence because on x86 it is one locked
    // instruction, where a store followed by a fence drains the store buffer in a second one
    // (never dearer than the pair in the measurements of docs/performance.md, "Fork-join fast
    // path", and cheaper in one of two). Its release part keeps every write of bottom a
    // release (see push): a thief that reads this value still synchronizes with the pushes
    // before it. The value read back is ours (only the owner writes bottom).
    shared_.value.bottom.exchange(b, std::memory_order_seq_cst);
    own.bottom = b;
    // seq_cst: Rt above. Its acquire part pairs with the CAS of top by which thieves took the
    // positions below t: their speculative slot reads happen-before our later overwrite of
    // those slots (push).
    auto t = shared_.value.top.load(std::memory_order_seq_cst);
    own.cached_top = t;
    if (t < b) {
      return own.buffer->load(b);  // more than one item: no thief can reach position b.
    }
    std::optional<T> out;
    if (t == b) {
      // seq_cst: the last item; this CAS and the thieves' seq_cst CAS on top decide it
      // (Lê et al. take). Failure relaxed: a thief took it, nothing of its is read.
      if (shared_.value.top.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                                    std::memory_order_relaxed)) {
        out = own.buffer->load(b);
        own.cached_top = t + 1;
      }
    }
    // release: as every store of bottom. The deque is empty: top == b + 1 == bottom.
    own.bottom = b + 1;
    shared_.value.bottom.store(b + 1, std::memory_order_release);
    return out;
  }

  /// Owner only. Takes the oldest item, competing with thieves by the same CAS on top.
  ///
  /// crossbeam takes the FIFO owner's item with an unconditional fetch_add on the front and
  /// stores the old value back when the deque was empty. A CAS is chosen here: top then only
  /// ever moves forward by a CAS from the value the taker read, which is what makes the
  /// single-CAS batch claim of take_batch sound and keeps every taker's order
  /// argument the same; the CAS fails only when a thief took an item (lock-free), and on x86
  /// an uncontended CAS costs what a fetch_add does. The FIFO owner never moves bottom back,
  /// so no fence is needed: only the CAS decides.
  auto pop_fifo() noexcept -> std::optional<T> {
    auto& own = owner_.value;
    auto const b = own.bottom;
    // acquire: as in pop_lifo, pairs with the thieves' CAS of top (slot reuse in push).
    auto t = shared_.value.top.load(std::memory_order_acquire);
    while (t < b) {
      auto const value = own.buffer->load(t);
      // acq_rel: acquire as the load above (also on failure, which reloads t); release is
      // not needed by any reader but costs nothing on x86 and keeps every write of top a
      // release, as the Synchronization block states.
      if (shared_.value.top.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel,
                                                  std::memory_order_acquire)) {
        own.cached_top = t + 1;
        return value;
      }
    }
    own.cached_top = t;
    return std::nullopt;
  }

  /// Any thread. Lê et al. steal, with seq_cst loads of top and bottom in place of the
  /// paper's fence between them (argument at `load_top_then_bottom`).
  auto steal() noexcept -> steal_result<T> {
    auto [t, b] = load_top_then_bottom();
    if (t >= b) {
      return {steal_status::empty, std::nullopt};
    }
    // acquire: pairs with the release store of the buffer in grow(): its copied slots are
    // visible. Loaded after bottom, so it is at least the buffer position t was written to.
    auto const* buffer = shared_.value.buffer.load(std::memory_order_acquire);
    auto const value = buffer->load(t);  // speculative: counts only if the CAS succeeds.
    // seq_cst: pairs with the owner's seq_cst CAS on the last item, as in Lê et al.: one CAS
    // from t wins. Its release part publishes our slot read to the owner's acquire loads of top.
    // Failure relaxed: we lost the race and discard the read.
    if (!shared_.value.top.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                                   std::memory_order_relaxed)) {
      return {steal_status::retry, std::nullopt};
    }
    return {steal_status::stolen, value};
  }

  /// Any thread, which owns `dest`. See stealer::steal_batch_and_pop for the contract.
  auto steal_batch_and_pop(deque_state& dest) -> steal_result<T> {
    // In every build: the batch would be written back into the deque it is claimed from.
    SPINDLE_CHECK(&dest != this,
                  "steal_batch_and_pop into the deque_owner of the deque it steals from");
    auto const [t, b] = load_top_then_bottom();
    if (t >= b) {
      return {steal_status::empty, std::nullopt};
    }
    // Half of what we saw, rounded up: one to return, at most deque_max_batch into dest.
    auto const claim = std::min((b - t + 1) / 2, deque_max_batch + 1);
    dest.reserve_room(claim - 1);  // may throw, before anything is claimed
    auto& into = dest.owner_.value;
    // The caller owns dest, so it may read dest's owner-private copy of its bottom.
    auto const dest_bottom = into.bottom;
    std::optional<T> first;
    auto const got = take_batch(t, claim, [&](std::int64_t k, T value) noexcept {
      if (k == 0) {
        first = value;
      } else {
        // Speculative too for a FIFO deque: positions above dest's bottom are invisible to
        // its thieves, and reserve_room made sure they overlay no live position of dest.
        into.buffer->store(dest_bottom + k - 1, value);
      }
    });
    if (!got) {
      return {got.status, std::nullopt};
    }
    auto const moved = static_cast<std::int64_t>(got.count) - 1;
    if (moved > 0) {
      // release: as push's, publishes the slots just written to dest's thieves.
      into.bottom = dest_bottom + moved;
      dest.shared_.value.bottom.store(dest_bottom + moved, std::memory_order_release);
    }
    return {steal_status::stolen, first};
  }

  /// Any thread. See stealer::steal_batch for the contract: about half of the items, at most
  /// `max` (>= 1), written to out[0, count), oldest first.
  auto steal_batch(T* out, std::size_t max) noexcept -> steal_batch_result {
    auto const [t, b] = load_top_then_bottom();
    if (t >= b) {
      return {steal_status::empty, 0};
    }
    // Half of what we saw, rounded up, as steal_batch_and_pop; max is at least 1 (the handle
    // checks it) and compared unsigned, so a span of any size is fine.
    auto const half = static_cast<std::size_t>((b - t + 1) / 2);
    auto const claim = static_cast<std::int64_t>(std::min(half, max));
    // out may be written speculatively (FIFO): a failed claim leaves it unspecified, count 0.
    return take_batch(t, claim, [out](std::int64_t k, T value) noexcept { out[k] = value; });
  }

 private:
  /// Takes a batch of up to `claim` (>= 1) items from the top, having read top == t (and a
  /// bottom above it), and hands item k of the batch, oldest first, to sink(k, item).
  /// Returns stolen and the count, or the status of a first take that failed.
  ///
  /// FIFO: sink is called for [t, t + claim) before the single CAS that claims them, so its
  /// writes are speculative: they count only on success, and the sink must write where no
  /// one else reads until the caller publishes. LIFO: one full steal() per item, sink called
  /// after each won CAS; the batch stops at the first lost race or empty deque.
  ///
  /// Why one CAS may claim a whole batch from a FIFO deque but not from a LIFO one. In FIFO
  /// order every taker, thieves and owner alike, takes only by a CAS of top from the value it
  /// read, and bottom never moves back. A CAS t -> t+k therefore succeeds only if nobody took
  /// any position >= t since we read t, and positions [t, b) with b read after t exist until
  /// taken: [t, t+k) with t+k <= b is ours alone. In LIFO order the owner takes position
  /// bottom-1 with no CAS at all whenever the top it reads after its exchange is below it. A thief
  /// that read bottom = B can be overtaken by the owner popping B-1, B-2, ... down to t+1, each
  /// pop reading top == t (we have not moved it yet), so none needed a CAS; our CAS t -> t+k
  /// would still succeed and claim positions the owner already returned. No check of bottom
  /// made before our CAS helps, because the owner keeps popping after it; only the single-item
  /// CAS on the last item (t == bottom-1) orders the owner against a thief. So from a LIFO
  /// deque the batch is stolen one item at a time, each with the full steal protocol (as
  /// crossbeam-deque does: src/deque.rs, steal_batch_with_limit_and_pop).
  template <class Sink>
  auto take_batch(std::int64_t t, std::int64_t claim, Sink&& sink) noexcept -> steal_batch_result {
    if (fifo_) {
      // acquire: as in steal(), pairs with the release store of the buffer in grow().
      auto const* buffer = shared_.value.buffer.load(std::memory_order_acquire);
      for (std::int64_t k = 0; k < claim; ++k) {
        sink(k, buffer->load(t + k));  // speculative: counts only if the CAS succeeds
      }
      // seq_cst: as in steal(); claims [t, t + claim) at once (argument above).
      if (!shared_.value.top.compare_exchange_strong(t, t + claim, std::memory_order_seq_cst,
                                                     std::memory_order_relaxed)) {
        return {steal_status::retry, 0};
      }
      return {steal_status::stolen, static_cast<std::size_t>(claim)};
    }
    std::int64_t got = 0;
    for (; got < claim; ++got) {
      auto next = steal();
      if (!next.value) {
        if (got == 0) {
          return {next.status, 0};
        }
        break;
      }
      sink(got, *next.value);
    }
    return {steal_status::stolen, static_cast<std::size_t>(got)};
  }

  // top and bottom share one cache line, as in crossbeam-deque (src/deque.rs: `Inner` holds
  // front, back and the buffer pointer in one CachePadded): a thief reads both with one miss,
  // and the owner's pop (exchange of bottom, load of top) touches one line instead of two.
  // With them on separate lines the 1 owner + n thieves sweep ran at 0.50-0.59x xenium's
  // deque (which also keeps them together); on one line, 0.94-1.00x (docs/performance.md,
  // "Fork-join fast path"). The owner-private fields stay on a line of their own.
  // SPINDLE_DEQUE_SPLIT_LINES=1 moves bottom to a line of its own, to compare the layouts.
  struct shared_side {
    detail::atomic<std::int64_t> top{0};
#if SPINDLE_DEQUE_SPLIT_LINES
    detail::atomic<deque_buffer<T>*> buffer{nullptr};
    alignas(detail::cache_line) detail::atomic<std::int64_t> bottom{0};
#else
    detail::atomic<std::int64_t> bottom{0};
    detail::atomic<deque_buffer<T>*> buffer{nullptr};
#endif
  };
  struct owner_side {
    deque_buffer<T>* buffer = nullptr;  // the current buffer (owner-private copy)
    std::int64_t cached_top = 0;        // a past value of top, loaded with acquire
    std::int64_t bottom = 0;            // the last value the owner stored to bottom
  };

  struct top_and_bottom {
    std::int64_t top;
    std::int64_t bottom;
  };

  /// Any thread. A thief's loads of top, then bottom, both seq_cst (steal, steal_batch).
  ///
  /// Lê et al. put a seq_cst fence between these two loads and one in the owner's take,
  /// between its store of bottom and its load of top. Here all four accesses are seq_cst
  /// operations instead, with no fence on either side: the thief's loads are plain loads on
  /// x86, and the owner's store is an exchange (one locked instruction; pop_lifo). The fence
  /// pair serves the proof with one store-buffering fact, which seq_cst operations give
  /// directly under C++20 [atomics.order] p3-p4 (P0668R5). Let a pop_lifo that decremented
  /// bottom run
  ///   Wb: bottom.exchange(b, seq_cst); Rt: top.load(seq_cst) reads t_o,
  /// and a thief run Lt: top.load(seq_cst) reads t_s; Lb: bottom.load(seq_cst). Suppose Lb
  /// reads a store of bottom that precedes Wb in bottom's modification order, and t_o < t_s
  /// (top only grows, and only by read-modify-writes, so Rt read an earlier write than Lt):
  ///   - Lb is coherence-ordered before Wb (p3.3), both seq_cst: Lb precedes Wb in S (p4).
  ///   - Rt is coherence-ordered before the CAS that wrote t_s (p3.3), which is coherence-
  ///     ordered before Lt (p3.1), so Rt is before Lt (p3.4), both seq_cst: Rt precedes Lt.
  ///   - Wb is sequenced before Rt and Lt before Lb, all seq_cst: Wb < Rt and Lt < Lb in S.
  /// S would have the cycle Wb < Rt < Lt < Lb < Wb. So: either the thief's load of bottom sees
  /// Wb or a later store, or the owner's load of top sees t_s or a later value. This is the
  /// fact two fences give by p4.4; the rest of Lê et al.'s proof uses no other.
  /// Consequences (position b is the one the pop decremented to):
  ///   - The owner takes b without a CAS only when t_o < b. A thief takes b only by a CAS from
  ///     t_s == b > t_o, so its Lb saw Wb or a later store: Wb says bottom == b (empty at b,
  ///     the thief returns empty), and a later store larger than b comes from a push after
  ///     this pop, which rewrote slot b before releasing bottom: the thief's slot read sees
  ///     that newer item (write-read coherence), not the one the owner popped.
  ///   - Otherwise (t_o == b, the last item; pop_lifo's one-item path; pop_fifo) the owner
  ///     takes b by a CAS of top from b, as every thief does: one CAS from b succeeds.
  /// The loads are also acquire, which the slot reads need (partners named below).
  auto load_top_then_bottom() const noexcept -> top_and_bottom {
    // seq_cst: Lt above; its acquire part pairs with the CAS that set top to t (a thief's or
    // the owner's), so the bottom loaded below is no older than the one that taker saw.
    auto const t = shared_.value.top.load(std::memory_order_seq_cst);
    // seq_cst: Lb above, ordered after the load of top in S; pairs with the exchange of
    // bottom and the seq_cst load of top in pop_lifo. Its acquire part pairs with the owner's
    // release stores of bottom (push): the slots below the value read, and the buffer holding them,
    // are visible.
    auto const b = shared_.value.bottom.load(std::memory_order_seq_cst);
    return {t, b};
  }

  static auto capacity_of(deque_buffer<T> const* buffer) noexcept -> std::int64_t {
    return static_cast<std::int64_t>(buffer->capacity());
  }

  void refresh_top() noexcept {
    // acquire: pairs with the CAS of top by which takers claimed the positions below the
    // value read: their speculative slot reads happen-before we overwrite those slots.
    owner_.value.cached_top = shared_.value.top.load(std::memory_order_acquire);
  }

  /// Owner only. Re-reads top, then grows until positions [top, bottom + n) fit.
  /// Throws: std::bad_alloc (the deque is unchanged).
  [[gnu::noinline]] void make_room(std::int64_t bottom, std::int64_t n) {
    refresh_top();
    while (bottom + n - owner_.value.cached_top > capacity_of(owner_.value.buffer)) {
      grow(bottom);
    }
  }

  /// Owner only. Doubles the buffer, keeping positions [cached_top, bottom).
  /// Throws: std::bad_alloc (the deque is unchanged).
  void grow(std::int64_t bottom) {
    auto& own = owner_.value;
    auto* old = own.buffer;
    if (old->capacity() >= deque_max_capacity) {
      throw std::bad_alloc();
    }
    auto next = old->grown(own.cached_top, bottom);
    retired_.reserve(retired_.size() + 1);  // so that nothing below can throw
    // release: publishes the slots copied into `next`; pairs with the acquire load of the
    // buffer in steal()/steal_batch_and_pop() (CDSChecker fix: the paper's store is relaxed).
    shared_.value.buffer.store(next.get(), std::memory_order_release);
    own.buffer = next.release();
    // SAFETY: a thief may still read `old`; it stays allocated, unchanged, until ~deque_state.
    retired_.emplace_back(old);
  }

  detail::cache_padded<shared_side> shared_;
  detail::cache_padded<owner_side> owner_;
  detail::atomic<std::size_t> refs_{1};
  bool const fifo_;
  std::vector<std::unique_ptr<deque_buffer<T>>> retired_;  // owner-private until destruction
};

/// Validates a requested capacity and rounds it up to a power of two.
/// Throws: std::invalid_argument for 0 or more than deque_max_capacity.
inline auto deque_initial_capacity(std::size_t requested) -> std::size_t {
  if (requested == 0) {
    throw std::invalid_argument("spindle::deque_owner: initial capacity must be at least 1");
  }
  if (requested > deque_max_capacity) {
    throw std::invalid_argument("spindle::deque_owner: initial capacity above 2^40 slots");
  }
  return std::bit_ceil(requested);
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
