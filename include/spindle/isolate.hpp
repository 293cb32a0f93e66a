// SPDX-License-Identifier: BSL-1.0
#pragma once
// spindle::isolate: run a function so that its waits run only its own tasks.
//
// A worker that waits in a join, a task_group::wait() or a join_handle::join() runs other
// tasks meanwhile (help-first, executor_core.hpp). That is what makes fork-join cheap, and
// what breaks code that holds a lock across a join: the waiting worker may pick up an
// unrelated task that takes the same lock, on the same thread, under the frame that holds it,
// and the program deadlocks (rayon issues #592 and #1174). oneTBB's
// this_task_arena::isolate is the answer this follows:
//
//   std::lock_guard lock(cache_mutex);
//   spindle::isolate(ex, [&] {
//     spindle::parallel_for(ex, 0, n, [&](int i) { rebuild(i); });  // waits run only rebuild
//   });
//
// While `f` runs, every task the calling thread queues (spawn, post, task_group::spawn, join,
// the parallel loops) is tagged with a fresh isolation region, and every wait of the calling
// thread runs only tasks of that region: from its own deque, and from any other deque, where a
// thief may have moved part of the region's work before it went on to block on something else
// (the lock the caller holds, say). A task of another region that such a wait takes on its way
// goes back onto the waiting thread's deque, where any other thread can run it. When nothing
// of the region is queued anywhere the wait sleeps until it is over, or until tasks are
// queued or moved (executor_core.hpp, wait_isolated()); it never takes from the injector. A
// task of the region that another worker steals runs there inside the region too, so that
// worker's waits are isolated the same way (oneTBB propagates the isolation tag to stolen
// tasks likewise). Tasks that were queued before isolate() began, coroutine resumptions (also
// those woken inside the region) and outside submissions never run inside the region's waits,
// nor in a join's own pop of its second half. Regions nest: an inner region's waits run
// only the inner region's tasks.
//
// The region ends when f returns or throws: a worker left by an exception helps with every
// task again (tests/isolate_test.cpp, ExceptionRestoresTheRegionOnAWorker).
//
// Cost: a region id per call (one relaxed increment of a process-wide counter) and two stores
// of a thread-local; tasks carry their region in their record. An isolated wait helps less
// (it runs nothing outside its region, and moves what it steals and may not run), so isolate
// only code that holds what an unrelated task could need.
//
// Thread safety: any thread; from a thread that is not a worker, f's joins take a guest slot
// as usual (executor.hpp, run_as_root) and wait isolated there.
// Example: tests/isolate_test.cpp (Example, LockAcrossJoin).

#include <spindle/detail/executor/task.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/executor.hpp>

#include <atomic>
#include <concepts>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

namespace detail {

/// A region id never handed out before in this process (0 means "no region"). The counter only
/// names regions; it orders no other memory, so it is a plain std::atomic rather than the
/// model-checked alias: no interleaving of its increments can change what the scheduler does.
inline auto new_isolation_region() noexcept -> std::uint64_t {
  static std::atomic<std::uint64_t> next{0};
  // relaxed: a unique number is all that is needed (see above).
  return next.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace detail

/// Runs `f()` on the calling thread inside a fresh isolation region (see the file comment) and
/// returns its result. The region ends when f returns or throws. `ex` is the executor whose
/// tasks f waits for; the region covers the calling thread's waits on any executor.
///
/// Thread safety: any thread. Throws: whatever f throws.
template <class F>
requires std::invocable<F&&>
auto isolate(executor& ex, F&& f) -> std::invoke_result_t<F&&> {
  static_cast<void>(ex);
  struct restore {
    std::uint64_t saved;
    ~restore() { detail::current_isolation = saved; }
  } const guard{std::exchange(detail::current_isolation, detail::new_isolation_region())};
  return std::invoke(std::forward<F>(f));
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE
