// SPDX-License-Identifier: BSL-1.0
#pragma once
// Fixed-size nodes for the executor's heap task records (spawn, post, task_group::spawn),
// recycled through a per-thread cache that frees return to.
//
// Why: every node is allocated by the producer and freed by a worker, so the general-purpose
// allocator moved each chunk between threads, and malloc and free dominated the producer's
// profile (measurements: docs/performance.md, Executor).
// Here each thread allocates from its own heap; a node freed by its allocating thread goes
// back to that heap's local list, a node freed by any other thread joins that thread's batch
// for the heap (`remote_batch`, thread_local), which is pushed onto the allocating heap's
// `remote_` stack as one chain (one CAS per remote_batch_size nodes, see free_to_batch()), and
// the owner takes the whole stack with one exchange when its local list runs dry. This is the "free
// list per heap plus a thread-free list" of mimalloc (Leijen, Zorn, de Moura: "Mimalloc: Free List
// Sharding in Action", 2019, §2.2 and §3), reduced to one size class; tokio and rayon keep per-task
// allocations on the global allocator.
//
// A record fits when sizeof <= pool_payload and alignof <= pool_align; larger ones use
// operator new. A heap creates at most `pool_limit` nodes (896 KiB) and keeps them until its
// thread exits; when all of them are out (a burst), further records use operator new and
// operator delete, so memory held by the pool stays bounded by the limit per thread that
// spawns. Taking the remote stack is one exchange: its nodes become the local list as they
// are, with no walk (a walk would cost a cache miss per node, each freed on another core).
//
// Lifetime: a heap lives as long as its thread and as long as any node it handed out. When
// its thread exits, `abandon()` swaps `remote_` to the `abandoned` mark and frees the nodes
// it holds (its local list and the remote stack it took). A later free (a batch, or a single
// node) sees the mark, frees its nodes and adds their number to `balance_`; the owner subtracts the
// number of nodes still out (created minus held). Whoever brings the balance to zero (the owner
// itself when nothing was out) deletes the heap. A thread that allocates after its heap was
// destroyed (thread_local destructors running) gets an unpooled node; a thread whose batch was
// flushed for its exit returns later remote frees one at a time.
//
// Under SPINDLE_MODEL_CHECK every node is unpooled: a thread_local cache would outlive a model
// execution and carry state into the next one.
//
// Synchronization:
//   local_, nodes_  the owner thread only.
//   remote_   Treiber stack: pushed by other threads (release CAS), taken by the owner
//             (acquire exchange); holds the `abandoned` mark once the owner exited. A push
//             never reads a node's fields, so ABA is harmless.
//   balance_  acq_rel RMWs by late freers (+nodes freed) and the exiting owner (-out).
//   A node's `next` is written by whoever frees it, before the release CAS that publishes it.
//   pending_remote, remote_batch_gone  thread_local: the freeing thread only.

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// Largest task record the pool serves. A node (16-byte header and payload) of 112 bytes
/// keeps the fallback path of glibc's malloc, for nodes beyond pool_limit, in its fast bins.
inline constexpr std::size_t pool_payload = 96;
/// Strictest alignment the pool serves.
inline constexpr std::size_t pool_align = 16;
/// Pooled nodes one thread's heap creates at most (112 bytes each); beyond that, records
/// come from operator new.
inline constexpr std::size_t pool_limit = 8192;

class pool_heap;

struct pool_node {
  // nullptr for an unpooled node (freed with operator delete).
  pool_heap* owner;
  // INVARIANT: meaningful only while the node is free (in a local list or a remote stack).
  pool_node* next;
  alignas(pool_align) unsigned char payload[pool_payload];
};

/// A payload outside any pool, as large as the record needs (a full pool_node would put it
/// in a larger size class of the general-purpose allocator). Throws: std::bad_alloc.
/// It starts with a null owner pointer, where a pooled node has its `owner`.
inline auto allocate_unpooled(std::size_t size) -> void* {
  void* const raw = ::operator new(offsetof(pool_node, payload) + size);
  ::new (raw) pool_heap*(nullptr);
  return static_cast<unsigned char*>(raw) + offsetof(pool_node, payload);
}

class pool_heap {
 public:
  pool_heap() = default;
  pool_heap(pool_heap const&) = delete;
  auto operator=(pool_heap const&) -> pool_heap& = delete;

  /// A node's payload for a record of `size` bytes. Owner thread only.
  /// Throws: std::bad_alloc.
  auto allocate(std::size_t size) -> void* {
    pool_node* n = local_ != nullptr ? local_ : collect();
    if (n != nullptr) {
      local_ = n->next;
      return n->payload;
    }
    if (nodes_ == pool_limit) {
      return allocate_unpooled(size);
    }
    n = static_cast<pool_node*>(::operator new(sizeof(pool_node)));
    ++nodes_;
    n->owner = this;
    return n->payload;
  }

  /// Returns a node of this heap, from its owner thread.
  void free_local(pool_node* n) noexcept {
    n->next = local_;
    local_ = n;
  }

  /// Returns the chain `first` .. `last` (`count` nodes of heap `h`, linked through `next`)
  /// from a thread that is not its owner (or after it exited): one CAS for the whole chain.
  static void free_remote(pool_heap* h, pool_node* first, pool_node* last,
                          std::int64_t count) noexcept {
    // acquire: if we read the abandoned mark, pairs with the release exchange in abandon().
    pool_node* head = h->remote_.load(std::memory_order_acquire);
    for (;;) {
      if (head == abandoned()) {
        release_list_n(first, count);
        // acq_rel: the late freers and the exiting owner count together; the one that brings
        // the balance to zero sees every other's last use of the heap (acquire) and deletes it.
        if (h->balance_.fetch_add(count, std::memory_order_acq_rel) == -count) {
          delete h;
        }
        return;
      }
      last->next = head;
      // release: publishes the chain's `next` fields (and the end of our use of its nodes) to
      // the owner's acquire exchange in collect()/abandon(); acquire on failure: as the load
      // above.
      if (h->remote_.compare_exchange_weak(head, first, std::memory_order_release,
                                           std::memory_order_acquire)) {
        return;
      }
    }
  }

  /// The owner thread exits: see "Lifetime" in the file comment. `*this` may be deleted.
  void abandon() noexcept {
    std::int64_t held = release_list(std::exchange(local_, nullptr));
    // acq_rel: release publishes our use of the heap to the freers that read the mark;
    // acquire takes the pushed nodes (pairs with their release CAS).
    held += release_list(remote_.exchange(abandoned(), std::memory_order_acq_rel));
    std::int64_t const out = static_cast<std::int64_t>(nodes_) - held;
    // acq_rel: as in free_remote(). The freers that saw the mark before this raised the
    // balance by one each; it reaches zero when the last node still out comes back.
    if (balance_.fetch_sub(out, std::memory_order_acq_rel) == out) {
      delete this;
    }
  }

 private:
  static auto abandoned() noexcept -> pool_node* {
    static constinit pool_node mark{};
    return &mark;
  }

  /// Frees the first `count` nodes of the chain at `n`.
  static void release_list_n(pool_node* n, std::int64_t count) noexcept {
    for (std::int64_t i = 0; i < count; ++i) {
      pool_node* const next = n->next;
      ::operator delete(n);
      n = next;
    }
  }

  static auto release_list(pool_node* n) noexcept -> std::int64_t {
    std::int64_t count = 0;
    while (n != nullptr) {
      pool_node* const next = n->next;
      ::operator delete(n);
      n = next;
      ++count;
    }
    return count;
  }

  /// Takes every node other threads returned as the new local list; returns its head.
  auto collect() noexcept -> pool_node* {
    // relaxed: a hint that saves the exchange when nothing was returned.
    if (remote_.load(std::memory_order_relaxed) == nullptr) {
      return nullptr;
    }
    // acquire: pairs with the release CAS in free_remote(): the nodes' `next` fields and the
    // freers' last use of them happen-before our reuse.
    local_ = remote_.exchange(nullptr, std::memory_order_acquire);
    return local_;
  }

  // Owner only.
  pool_node* local_ = nullptr;
  // INVARIANT: pooled nodes this heap created and has not deleted; at most pool_limit.
  std::size_t nodes_ = 0;
  atomic<pool_node*> remote_{nullptr};
  // Zero until abandon(); see there.
  atomic<std::int64_t> balance_{0};
};

#if !defined(SPINDLE_MODEL_CHECK)
/// The calling thread's heap; nullptr before its first pooled allocation and after it exited.
inline thread_local pool_heap* current_pool_heap = nullptr;
/// True once the calling thread's heap was abandoned (its thread_local destructors run).
inline thread_local bool pool_heap_gone = false;

struct pool_heap_guard {
  pool_heap* heap;
  pool_heap_guard() : heap(new pool_heap) {}
  pool_heap_guard(pool_heap_guard const&) = delete;
  auto operator=(pool_heap_guard const&) -> pool_heap_guard& = delete;
  ~pool_heap_guard() {
    current_pool_heap = nullptr;
    pool_heap_gone = true;
    heap->abandon();
  }
};

inline auto pool_heap_slow() -> pool_heap* {
  if (pool_heap_gone) {
    return nullptr;
  }
  thread_local pool_heap_guard guard;
  current_pool_heap = guard.heap;
  return guard.heap;
}

/// Nodes a thread returns to another thread's heap at once (one CAS per batch).
inline constexpr std::int64_t remote_batch_size = 32;

/// Nodes of one other thread's heap that the calling thread freed and has not returned yet.
/// INVARIANT: `count` nodes of `heap`, linked from `first` to `last` through `next`; empty
/// (count == 0, heap == nullptr) after flush().
struct remote_batch {
  pool_heap* heap = nullptr;
  pool_node* first = nullptr;
  pool_node* last = nullptr;
  std::int64_t count = 0;

  void flush() noexcept {
    if (count != 0) {
      pool_heap::free_remote(heap, first, last, count);
    }
    heap = nullptr;
    first = nullptr;
    last = nullptr;
    count = 0;
  }
};

/// The calling thread's batch (constant-initialised, so reaching it costs no guard check).
inline thread_local remote_batch pending_remote{};
/// True once the calling thread's batch was flushed for its exit (thread_local destructors).
inline thread_local bool remote_batch_gone = false;

struct remote_batch_guard {
  remote_batch_guard() = default;
  remote_batch_guard(remote_batch_guard const&) = delete;
  auto operator=(remote_batch_guard const&) -> remote_batch_guard& = delete;
  ~remote_batch_guard() {
    pending_remote.flush();
    remote_batch_gone = true;
  }
};

/// Returns node `n` of heap `h`, which is not the calling thread's: into the calling thread's
/// batch, which goes back to its heap in one CAS once it holds remote_batch_size nodes, when
/// a node of another heap comes, or when the thread exits. Why: a worker running an outside
/// thread's tasks returned every node with its own CAS on the heap's stack, which the other
/// workers and the owner's collect() also touched: a contended cache line per task
/// (measurements: docs/performance.md, Executor). A batch keeps at most
/// remote_batch_size - 1 nodes away from their heap per freeing thread, for as long as that
/// thread frees nothing else.
inline void free_to_batch(pool_heap* h, pool_node* n) noexcept {
  remote_batch& b = pending_remote;
  if (b.heap == h) [[likely]] {
    n->next = b.first;
    b.first = n;
    if (++b.count == remote_batch_size) {
      b.flush();
    }
    return;
  }
  if (remote_batch_gone) {
    pool_heap::free_remote(h, n, n, 1);
    return;
  }
  b.flush();
  // Registers the flush at thread exit (once per thread; later calls only test a flag).
  thread_local remote_batch_guard const guard;
  static_cast<void>(guard);
  n->next = nullptr;
  b.heap = h;
  b.first = n;
  b.last = n;
  b.count = 1;
}
#endif

/// A node's payload for one task record of `size` <= pool_payload bytes.
/// Throws: std::bad_alloc.
inline auto pool_allocate(std::size_t size) -> void* {
#if !defined(SPINDLE_MODEL_CHECK)
  pool_heap* h = current_pool_heap;
  if (h == nullptr) [[unlikely]] {
    h = pool_heap_slow();
  }
  if (h != nullptr) [[likely]] {
    return h->allocate(size);
  }
#endif
  return allocate_unpooled(size);
}

/// Returns a payload from pool_allocate(), from any thread.
inline void pool_free(void* payload) noexcept {
  void* const base = static_cast<unsigned char*>(payload) - offsetof(pool_node, payload);
  // A pooled node's `owner` is its first member (pointer-interconvertible with the node).
  pool_heap* const h = *static_cast<pool_heap**>(base);
  if (h == nullptr) {
    ::operator delete(base);
    return;
  }
  auto* const n = static_cast<pool_node*>(base);
#if !defined(SPINDLE_MODEL_CHECK)
  if (h == current_pool_heap) {
    h->free_local(n);
    return;
  }
  free_to_batch(h, n);
#else
  pool_heap::free_remote(h, n, n, 1);
#endif
}

/// Whether T's records come from the pool.
template <class T>
inline constexpr bool pooled_v = sizeof(T) <= pool_payload && alignof(T) <= pool_align;

/// Creates a task record: pooled when it fits, operator new otherwise.
/// Throws: std::bad_alloc; whatever T's constructor throws (the memory is returned).
template <class T, class... Args>
auto new_node(Args&&... args) -> T* {
  if constexpr (pooled_v<T>) {
    void* const p = pool_allocate(sizeof(T));
    try {
      return ::new (p) T(std::forward<Args>(args)...);
    } catch (...) {
      pool_free(p);
      throw;
    }
  } else {
    return new T(std::forward<Args>(args)...);
  }
}

/// Destroys a record made by new_node<T>, from any thread.
template <class T>
void delete_node(T* t) noexcept {
  if constexpr (pooled_v<T>) {
    t->~T();
    pool_free(t);
  } else {
    delete t;
  }
}

/// Owns a record from new_node<T> until release() (a unique_ptr for pooled records).
template <class T>
class node_ptr {
 public:
  explicit node_ptr(T* p) noexcept : p_(p) {}
  node_ptr(node_ptr const&) = delete;
  auto operator=(node_ptr const&) -> node_ptr& = delete;
  ~node_ptr() {
    if (p_ != nullptr) {
      delete_node(p_);
    }
  }
  [[nodiscard]] auto get() const noexcept -> T* { return p_; }
  auto release() noexcept -> T* { return std::exchange(p_, nullptr); }

 private:
  T* p_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
