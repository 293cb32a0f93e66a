#pragma once
// spindle::deque_owner<T> / spindle::stealer<T>: the Chase-Lev work-stealing deque.
//
// One thread, the owner, holds the `deque_owner<T>` and pushes and pops at the bottom; any thread
// holding a `stealer<T>` takes the oldest item from the top. An executor gives each of its
// worker threads one deque and lets idle threads steal from the others. (The owner handle was
// called `worker<T>`, after crossbeam-deque's `Worker`; that name is kept as an alias, but an
// executor's "workers" are its threads, so the library and its examples say `deque_owner`.)
// Example: examples/deque.cpp and the `Example` test in tests/deque_test.cpp.
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
//   - The loads of `top` by the owner are acquire, so that a thief's speculative slot read is
//     ordered before the owner overwrites that slot a lap later; the owner caches `top`
//     (Taskflow's `_cached_top`) and re-reads it only when the buffer looks full or it pops.
//   - When the owner's cached top says one item is left, pop takes it with a single CAS of
//     top, as a thief would, and skips the decrement of bottom and the fence: a lone item is
//     both the top and the bottom one (argument at `pop_lifo`). A push+pop pair on an empty
//     deque then costs one CAS instead of a fence plus a CAS.
//   - A thief loads top and bottom with seq_cst loads instead of the paper's seq_cst fence
//     between two loads; the owner's pop keeps its fence. Under C++20 [atomics.order] p4
//     (P0668R5) a seq_cst fence orders against seq_cst operations as against another fence,
//     which is all the proof needs (argument at `load_top_then_bottom`). On x86 a seq_cst load
//     is a plain load, so a steal pays for no barrier besides its CAS.
//   - FIFO owner pop and batch stealing (crossbeam-deque: src/deque.rs) are additions; their
//     correctness arguments are at `pop_fifo` and `steal_batch_and_pop` below.
//
// Thread safety: `deque_owner<T>` is used by one thread at a time (its owner; moving it to another
// thread needs the usual happens-before of the hand-over). `stealer<T>` is copyable and every
// copy may be used from any thread concurrently.
// Progress: push is wait-free except when it grows (an allocation and a copy); a LIFO pop is
// wait-free (one CAS, only on the last item, never retried); a FIFO pop is lock-free (its CAS
// is retried only when a thief took an item); steal is wait-free and returns `retry` instead
// of looping when it loses a race.
// Happens-before: whatever the owner did before `push(v)` is visible to the thread that
// obtains `v` from `pop`, `steal` or `steal_batch_and_pop`.
// Memory: one power-of-two buffer of `detail::atomic<T>`, doubled when full and never shrunk
// (shrinking is outside the paper's proof). Retired buffers are kept by the deque and freed
// with it, when the last handle dies: growth doubles, so the retired buffers together are
// smaller than the current one and the total is under twice the peak size. No epochs, no
// hazard pointers: a thief holding an old buffer pointer always reads live memory.
// When not to use it: for values that are not a pointer or an index (see `stealable`), for
// many producers (use a channel), or when strict FIFO across threads matters.

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
#include <type_traits>
#include <utility>
#include <vector>

namespace spindle {

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

/// Outcome of a steal: got an item; the deque was empty; or lost a race with another taker
/// (try again, possibly another victim first).
enum class steal_status : std::uint8_t { success, empty, retry };

/// Result of `stealer<T>::steal`: a status and, exactly when it is `success`, the item.
template <class T>
struct [[nodiscard]] steal_result {
  steal_status status;
  std::optional<T> value;  // engaged iff status == success

  explicit operator bool() const noexcept { return status == steal_status::success; }
  [[nodiscard]] auto is_success() const noexcept -> bool { return status == steal_status::success; }
  [[nodiscard]] auto is_empty() const noexcept -> bool { return status == steal_status::empty; }
  [[nodiscard]] auto is_retry() const noexcept -> bool { return status == steal_status::retry; }
};

template <stealable T>
class stealer;

namespace detail {

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
/// - owner-private (`owner_side::buffer`, `cached_top`, `retired_`): touched only by the
///   owner, and by the destructor, which runs after every handle released its reference.
///   INVARIANT: cached_top <= top (top never decreases and cached_top is a past value of it).
/// - `refs_`: one per live handle; the handle that brings it to zero deletes the state.
template <class T>
class deque_state {
 public:
  deque_state(deque_order order, std::size_t capacity) : order_(order) {
    auto first = std::make_unique<deque_buffer<T>>(capacity);
    owner_.value.buffer = first.get();
    // relaxed: no other thread knows this state yet; handing a handle to another thread
    // needs a happens-before edge (thread start, a channel), which publishes this store.
    thief_.value.buffer.store(first.release(), std::memory_order_relaxed);
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

  [[nodiscard]] auto order() const noexcept -> deque_order { return order_; }

  [[nodiscard]] auto owner_capacity() const noexcept -> std::size_t {
    return owner_.value.buffer->capacity();
  }

  [[nodiscard]] auto approximate_size() const noexcept -> std::size_t {
    // relaxed: a statistic; the two loads are not a snapshot (documented on size()).
    auto const t = thief_.value.top.load(std::memory_order_relaxed);
    // relaxed: as above.
    auto const b = owner_.value.bottom.load(std::memory_order_relaxed);
    return b > t ? static_cast<std::size_t>(b - t) : 0;
  }

  /// Owner only. Makes room for `n` more items so that writing them cannot allocate.
  /// Throws: std::bad_alloc (the deque is unchanged).
  void reserve_room(std::int64_t n) {
    // relaxed: only the owner writes bottom, and this is the owner.
    auto const b = owner_.value.bottom.load(std::memory_order_relaxed);
    if (b + n - owner_.value.cached_top > capacity_of(owner_.value.buffer)) {
      make_room(b, n);
    }
  }

  /// Owner only. Lê et al. push, with the CDSChecker fix: write into the buffer grow made.
  void push(T value) {
    auto& own = owner_.value;
    // relaxed: only the owner writes bottom, and this is the owner.
    auto const b = own.bottom.load(std::memory_order_relaxed);
    if (b - own.cached_top >= capacity_of(own.buffer)) [[unlikely]] {
      make_room(b, 1);
    }
    own.buffer->store(b, value);
    // release: publishes the slot write above (and the caller's writes before push) to the
    // acquire load of bottom in steal()/steal_batch_and_pop(), which then reads the slot.
    own.bottom.store(b + 1, std::memory_order_release);
  }

  /// Owner only. Lê et al. take: claim the bottom item; only the last one is contended.
  auto pop_lifo() noexcept -> std::optional<T> {
    auto& own = owner_.value;
    // relaxed: only the owner writes bottom, and this is the owner.
    auto const old_bottom = own.bottom.load(std::memory_order_relaxed);
    if (old_bottom <= own.cached_top) {
      return std::nullopt;  // top >= cached_top >= bottom: empty, nothing to undo.
    }
    auto const b = old_bottom - 1;
    if (b == own.cached_top) {
      // At most one item (top >= cached_top == bottom - 1), and a single item is the top one
      // as well as the bottom one: take it as a thief would, with one CAS of top and neither
      // the decrement of bottom nor the fence (a deviation from Lê et al., whose take always
      // decrements first). Every taker of position b claims it by a CAS from b, so exactly
      // one succeeds; bottom never moves, so no thief's view of it can go stale.
      auto t = b;
      // acq_rel: acquire pairs with the CAS of earlier takers, as the load of top below;
      // release as every write of top. Failure acquire: a thief took it, and the value it
      // wrote (b + 1) becomes cached_top, with the same pairing.
      if (thief_.value.top.compare_exchange_strong(t, b + 1, std::memory_order_acq_rel,
                                                   std::memory_order_acquire)) {
        own.cached_top = b + 1;
        return own.buffer->load(b);
      }
      own.cached_top = t;
      return std::nullopt;
    }
    // release: every store of bottom is a release (see push); a thief that reads this value
    // still synchronizes with the pushes before it.
    own.bottom.store(b, std::memory_order_release);
    // seq_cst fence: orders the store of bottom above before the load of top below; pairs
    // with the thieves' seq_cst loads of top then bottom (load_top_then_bottom, which gives
    // the C++20 argument), so either the thief sees the decremented bottom or we see its
    // advanced top: both cannot take position b.
    fence_seq_cst();
    // acquire: pairs with the CAS of top by which thieves took the positions below t: their
    // speculative slot reads happen-before our later overwrite of those slots (push).
    auto t = thief_.value.top.load(std::memory_order_acquire);
    own.cached_top = t;
    if (t < b) {
      return own.buffer->load(b);  // more than one item: no thief can reach position b.
    }
    std::optional<T> out;
    if (t == b) {
      // seq_cst: the last item; this CAS and the thieves' seq_cst CAS on top decide it
      // (Lê et al. take). Failure relaxed: a thief took it, nothing of its is read.
      if (thief_.value.top.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                                   std::memory_order_relaxed)) {
        out = own.buffer->load(b);
        own.cached_top = t + 1;
      }
    }
    // release: as every store of bottom. The deque is empty: top == b + 1 == bottom.
    own.bottom.store(b + 1, std::memory_order_release);
    return out;
  }

  /// Owner only. Takes the oldest item, competing with thieves by the same CAS on top.
  ///
  /// crossbeam takes the FIFO owner's item with an unconditional fetch_add on the front and
  /// stores the old value back when the deque was empty. A CAS is chosen here: top then only
  /// ever moves forward by a CAS from the value the taker read, which is what makes the
  /// single-CAS batch claim of steal_batch_and_pop sound and keeps every taker's order
  /// argument the same; the CAS fails only when a thief took an item (lock-free), and on x86
  /// an uncontended CAS costs what a fetch_add does. The FIFO owner never moves bottom back,
  /// so no fence is needed: only the CAS decides.
  auto pop_fifo() noexcept -> std::optional<T> {
    auto& own = owner_.value;
    // relaxed: only the owner writes bottom, and this is the owner.
    auto const b = own.bottom.load(std::memory_order_relaxed);
    // acquire: as in pop_lifo, pairs with the thieves' CAS of top (slot reuse in push).
    auto t = thief_.value.top.load(std::memory_order_acquire);
    while (t < b) {
      auto const value = own.buffer->load(t);
      // acq_rel: acquire as the load above (also on failure, which reloads t); release is
      // not needed by any reader but costs nothing on x86 and keeps every write of top a
      // release, as the Synchronization block states.
      if (thief_.value.top.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel,
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
    auto const* buffer = thief_.value.buffer.load(std::memory_order_acquire);
    auto const value = buffer->load(t);  // speculative: counts only if the CAS succeeds.
    // seq_cst: pairs with the owner's seq_cst CAS on the last item, as in Lê et al.: one CAS
    // from t wins. Its release part publishes our slot read to the owner's acquire loads of top.
    // Failure relaxed: we lost the race and discard the read.
    if (!thief_.value.top.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                                  std::memory_order_relaxed)) {
      return {steal_status::retry, std::nullopt};
    }
    return {steal_status::success, value};
  }

  /// Any thread, which owns `dest`. See stealer::steal_batch_and_pop for the contract.
  ///
  /// Why one CAS may claim a whole batch from a FIFO deque but not from a LIFO one. In FIFO
  /// order every taker, thieves and owner alike, takes only by a CAS of top from the value it
  /// read, and bottom never moves back. A CAS t -> t+k therefore succeeds only if nobody took
  /// any position >= t since we read t, and positions [t, b) with b read after t exist until
  /// taken: [t, t+k) with t+k <= b is ours alone. In LIFO order the owner takes position
  /// bottom-1 with no CAS at all whenever the top it reads after its fence is below it. A thief
  /// that read bottom = B can be overtaken by the owner popping B-1, B-2, ... down to t+1, each
  /// pop reading top == t (we have not moved it yet), so none needed a CAS; our CAS t -> t+k
  /// would still succeed and claim positions the owner already returned. No check of bottom
  /// made before our CAS helps, because the owner keeps popping after it; only the single-item
  /// CAS on the last item (t == bottom-1) orders the owner against a thief. So from a LIFO
  /// deque the batch is stolen one item at a time, each with the full steal protocol (as
  /// crossbeam-deque does: src/deque.rs, steal_batch_with_limit_and_pop).
  auto steal_batch_and_pop(deque_state& dest) -> steal_result<T> {
    // In every build: the batch would be written back into the deque it is claimed from.
    SPINDLE_CHECK(&dest != this,
                  "steal_batch_and_pop into the deque_owner of the deque it steals from");
    auto [t, b] = load_top_then_bottom();
    if (t >= b) {
      return {steal_status::empty, std::nullopt};
    }
    // Half of what we saw, rounded up: one to return, at most deque_max_batch into dest.
    auto const claim = std::min((b - t + 1) / 2, deque_max_batch + 1);
    dest.reserve_room(claim - 1);  // may throw, before anything is claimed
    auto& into = dest.owner_.value;
    // relaxed: the caller owns dest, so it is the only writer of dest's bottom.
    auto const dest_bottom = into.bottom.load(std::memory_order_relaxed);
    std::int64_t moved = 0;
    std::optional<T> first;
    if (order_ == deque_order::fifo) {
      // acquire: as in steal(), pairs with the release store of the buffer in grow().
      auto const* buffer = thief_.value.buffer.load(std::memory_order_acquire);
      first = buffer->load(t);
      for (std::int64_t i = 1; i < claim; ++i) {
        // Speculative too: positions above dest's bottom are invisible to its thieves, and
        // reserve_room made sure they overlay no live position of dest.
        into.buffer->store(dest_bottom + i - 1, buffer->load(t + i));
      }
      // seq_cst: as in steal(); claims [t, t + claim) at once (argument above).
      if (!thief_.value.top.compare_exchange_strong(t, t + claim, std::memory_order_seq_cst,
                                                    std::memory_order_relaxed)) {
        return {steal_status::retry, std::nullopt};
      }
      moved = claim - 1;
    } else {
      auto head = steal();
      if (!head) {
        return head;
      }
      first = head.value;
      for (; moved < claim - 1; ++moved) {
        auto next = steal();
        if (!next) {
          break;
        }
        into.buffer->store(dest_bottom + moved, *next.value);
      }
    }
    if (moved > 0) {
      // release: as push's, publishes the slots just written to dest's thieves.
      into.bottom.store(dest_bottom + moved, std::memory_order_release);
    }
    return {steal_status::success, first};
  }

 private:
  struct thief_side {
    detail::atomic<std::int64_t> top{0};
    detail::atomic<deque_buffer<T>*> buffer{nullptr};
  };
  struct owner_side {
    detail::atomic<std::int64_t> bottom{0};
    deque_buffer<T>* buffer = nullptr;  // the current buffer (owner-private copy)
    std::int64_t cached_top = 0;        // a past value of top, loaded with acquire
  };

  struct top_and_bottom {
    std::int64_t top;
    std::int64_t bottom;
  };

  /// Any thread. A thief's loads of top, then bottom, both seq_cst (steal, steal_batch).
  ///
  /// Lê et al. put a seq_cst fence between these two loads, pairing with the owner's fence in
  /// pop_lifo. Here the owner keeps its fence and the thief uses seq_cst loads instead: on x86
  /// a seq_cst load is a plain load, so a steal has no barrier besides its CAS. The fence pair
  /// serves the proof with one store-buffering fact, and the mixed form gives the same fact
  /// under C++20 [atomics.order] p3-p4 (P0668R5). Let a pop_lifo that decremented bottom run
  ///   Wb: bottom.store(b, release); F: fence_seq_cst(); Rt: top.load(acquire) reads t_o,
  /// and a thief run Lt: top.load(seq_cst) reads t_s; Lb: bottom.load(seq_cst). Suppose Lb
  /// reads a store of bottom that precedes Wb in bottom's modification order, and t_o < t_s
  /// (top only grows, and only by read-modify-writes, so Rt read an earlier write than Lt):
  ///   - Lb is coherence-ordered before Wb (p3.3); Lb is a seq_cst operation and Wb happens
  ///     before the seq_cst fence F: by p4.2, Lb precedes F in S.
  ///   - Rt is coherence-ordered before the CAS that wrote t_s (p3.3), which is coherence-
  ///     ordered before Lt (p3.1), so Rt is before Lt (p3.4); F happens before Rt and Lt is a
  ///     seq_cst operation: by p4.3, F precedes Lt in S.
  ///   - Lt is sequenced before Lb, both seq_cst: Lt precedes Lb in S (p4, first sentence).
  /// S would have the cycle F < Lt < Lb < F. So: either the thief's load of bottom sees Wb or
  /// a later store, or the owner's load of top sees t_s or a later value. This is the fact two
  /// fences give by p4.4; the rest of Lê et al.'s proof does not use the thief's fence.
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
    auto const t = thief_.value.top.load(std::memory_order_seq_cst);
    // seq_cst: Lb above, ordered after the load of top in S; pairs with the fence in pop_lifo
    // after its store of bottom. Its acquire part pairs with the owner's release stores of
    // bottom (push): the slots below the value read, and the buffer holding them, are visible.
    auto const b = owner_.value.bottom.load(std::memory_order_seq_cst);
    return {t, b};
  }

  static auto capacity_of(deque_buffer<T> const* buffer) noexcept -> std::int64_t {
    return static_cast<std::int64_t>(buffer->capacity());
  }

  void refresh_top() noexcept {
    // acquire: pairs with the CAS of top by which takers claimed the positions below the
    // value read: their speculative slot reads happen-before we overwrite those slots.
    owner_.value.cached_top = thief_.value.top.load(std::memory_order_acquire);
  }

  /// Owner only. Re-reads top, then grows until positions [top, bottom + n) fit.
  /// Throws: std::bad_alloc (the deque is unchanged).
  void make_room(std::int64_t bottom, std::int64_t n) {
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
    thief_.value.buffer.store(next.get(), std::memory_order_release);
    own.buffer = next.release();
    // SAFETY: a thief may still read `old`; it stays allocated, unchanged, until ~deque_state.
    retired_.emplace_back(old);
  }

  detail::cache_padded<thief_side> thief_;
  detail::cache_padded<owner_side> owner_;
  detail::atomic<std::size_t> refs_{1};
  deque_order const order_;
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
      : state_(
            new detail::deque_state<T>(order, detail::deque_initial_capacity(initial_capacity))) {}

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
    return state_->order() == deque_order::lifo ? state_->pop_lifo() : state_->pop_fifo();
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
    return state_->order();
  }

 private:
  friend class spindle::stealer<T>;

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

/// The former name of deque_owner<T>, kept so that existing code compiles.
template <stealable T>
using worker = deque_owner<T>;

}  // namespace spindle
