// SPDX-License-Identifier: BSL-1.0
#pragma once
// The coroutines an executor lists for spindle::dump(): every coroutine spawned with a name
// (`ex.spawn(t, spindle::name("reader"))`), and every spawned coroutine when the executor was
// built with executor_options::list_coroutines(true) (or a stall report). A dump shows each
// with its name and id, whether it started, and what it is suspended on: the note its
// awaitable keeps in the coroutine's cancellation slot (detail/coro/cancel.hpp, note()).
//
// Why a list and why opt-in: a suspended coroutine is on no worker's stack and in no queue, so
// nothing else can find it; tokio's task dumps walk its list of owned tasks the same way
// (tokio/src/runtime/task/list.rs). Linking and unlinking take this list's lock, once at the
// spawn and once at the end of a listed coroutine; an unlisted coroutine costs one test at
// each, and its waits one test of the slot's `listed` flag.
//
// Lifetime: a record is linked by spawn() before the coroutine is queued and unlinked before
// its frame is destroyed (its end on a worker, a cancel before its start, or a spawn that
// failed), all while the executor lives; a dump reads records only under the lock, so it never
// reads a record that was unlinked.
//
// Synchronization:
//   mu_         guards the links and every record's membership.
//   started     written once by the worker that starts the coroutine (relaxed), read by dumps
//               (relaxed): a diagnostic, ordering nothing.
//   word        the note (coro_note): written through the coroutine's cancellation slot
//               (cancel_slot::note), read by dumps (relaxed).
// Not kept under the model checker: no executor lists coroutines there.

#include <spindle/detail/coro/cancel.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/mutex.hpp>

#include <cstdint>
#include <mutex>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

class coro_registry;

/// A listed coroutine's entry: allocated by its spawn and freed once unlinked, so that an
/// unlisted coroutine carries one null pointer for it, in its cancellation slot, through which
/// both its awaitables (the note) and its root (the record) find it.
struct coro_record : coro_note {
  coro_record* prev = nullptr;
  coro_record* next = nullptr;
  coro_registry* list = nullptr;  ///< while linked
  char const* name = nullptr;     ///< a string literal (spindle::name), or null
  std::uint64_t id = 0;
  void const* key = nullptr;  ///< what a join of this coroutine notes (its completion)
  atomic<bool> started{false};
};

class coro_registry {
 public:
  coro_registry() noexcept { head_.prev = head_.next = &head_; }
  coro_registry(coro_registry const&) = delete;
  auto operator=(coro_registry const&) -> coro_registry& = delete;
  ~coro_registry() = default;

  void add(coro_record& r) noexcept {
    std::lock_guard guard(mu_);
    r.list = this;
    r.prev = head_.prev;
    r.next = &head_;
    head_.prev->next = &r;
    head_.prev = &r;
  }

  /// Unlinks `r` if it is linked. `r.list` is touched by one party at a time: the spawn that
  /// links it, then whichever path ends the coroutine (its end, a cancel before its start, or
  /// the destruction of a root that was never queued).
  static void remove(coro_record& r) noexcept {
    coro_registry* const list = r.list;
    if (list == nullptr) {
      return;
    }
    std::lock_guard guard(list->mu_);
    r.prev->next = r.next;
    r.next->prev = r.prev;
    r.prev = r.next = nullptr;
    r.list = nullptr;
  }

  /// Calls `fn(record)` for every linked record, oldest first, under the lock.
  template <class Fn>
  void for_each(Fn&& fn) const {
    std::lock_guard guard(mu_);
    for (coro_record const* r = head_.next; r != &head_; r = r->next) {
      fn(*r);
    }
  }

 private:
  mutable mutex mu_;
  coro_record head_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
