// Cancellation frees what it cancels, under the model checker: every allocation made for a
// task (its heap node, the stored task_cancelled, a coroutine frame) is freed by the time the
// executor is gone, whichever side of the start election won.
//
// A cancelled task's node stays queued (task.hpp, shared_result): the worker that pops it
// finds it cancelled and only drops the executor's reference. A worker that returned without
// dropping it would leak the node and everything in it, and nothing else would show: the
// callable was already destroyed by the canceller, and join() still throws task_cancelled. So
// this binary counts the blocks that operator new hands out and operator delete takes back
// (the replacement functions below, in place of <spindle/model/track_allocations.hpp>, whose
// job of telling the race detector about freed memory they also do), and each execution checks
// that the count is back where it started once its executor is destroyed. Under
// SPINDLE_MODEL_CHECK every task node comes from operator new (detail/executor/task_pool.hpp
// keeps no per-thread cache there), so a leaked node is a block still counted.
//
// The seeded bug `cancel-skip-unref` in tools/mutate/mutants.txt (the worker's cancelled path
// without its release()) is killed here.

#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/model/atomic.hpp>
#include <spindle/model/scheduler.hpp>
#include <spindle/task.hpp>
#include <spindle/task_group.hpp>

#include <gtest/gtest.h>
#include <malloc.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <new>
#include <optional>
#include <stdexcept>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle_test::budget;
using spindle_test::explore_and_report;
using spindle_test::explore_three;
using spindle_test::tso;

namespace {

// The model checker allocates too (thread records, schedules, the race detector's history),
// and frees some of that only after an execution, so a count of every block would not come
// back to its start. So the counter watches the blocks made for the tests' tasks only, by
// their size: the callables below carry a padding of an unusual size, which makes their
// task nodes (and the coroutine's frame) sizes that nothing else here allocates.
constexpr std::size_t callable_pad = 331;
constexpr std::size_t frame_pad = 1499;

/// A spawned or group callable whose node has a size of its own.
struct padded_fn {
  std::array<unsigned char, callable_pad> pad{};
  int value = 0;
  auto operator()() const noexcept -> int { return value + pad[0]; }
};
struct padded_void_fn {
  std::array<unsigned char, callable_pad + 16> pad{};
  void operator()() const noexcept { static_cast<void>(pad[0]); }
};

// The size of the coroutine's frame, which only the compiler knows: measured once, before the
// tests run, as the largest block allocated while the coroutine is called (frame_probe()).
std::atomic<bool> probing{false};
std::atomic<std::size_t> probed_size{0};

// 0 until measure_frame() ran.
std::atomic<std::size_t> frame_bytes{0};

/// Whether a block of `n` bytes is one of the tests' task nodes or coroutine frames.
auto watched(std::size_t n) -> bool {
  static std::size_t const spawned = sizeof(spindle::detail::spawned_task<padded_fn, int>);
  static std::size_t const grouped =
      sizeof(spindle::detail::group_task<spindle::task_group, padded_void_fn>);
  // relaxed: set and read on the thread that probes, before any test runs.
  if (probing.load(std::memory_order_relaxed)) {
    if (n > probed_size.load(std::memory_order_relaxed)) {
      probed_size.store(n, std::memory_order_relaxed);
    }
    return false;
  }
  // relaxed: written before the explorations start, on this thread.
  std::size_t const frame = frame_bytes.load(std::memory_order_relaxed);
  return n == spawned || n == grouped || (frame != 0 && n == frame);
}

// The watched blocks still live: a fixed table, so that keeping it allocates nothing. Plain
// std::atomic: the test's own bookkeeping, outside what the model checker explores.
constexpr std::size_t table_size = 256;
std::array<std::atomic<void*>, table_size> live_table{};
std::atomic<std::int64_t> live_blocks{0};
std::atomic<std::int64_t> made_blocks{0};
std::atomic<bool> table_overflow{false};

void remember(void* p) {
  for (auto& slot : live_table) {
    void* expected = nullptr;
    // relaxed: the table is read after the threads that changed it were joined (the model
    // runs one thread at a time, and its hand-over orders their steps).
    if (slot.compare_exchange_strong(expected, p, std::memory_order_relaxed)) {
      // relaxed (both): as above.
      live_blocks.fetch_add(1, std::memory_order_relaxed);
      made_blocks.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  // relaxed: as above.
  table_overflow.store(true, std::memory_order_relaxed);
}

void forget(void* p) {
  for (auto& slot : live_table) {
    void* expected = p;
    // relaxed: as in remember().
    if (slot.compare_exchange_strong(expected, nullptr, std::memory_order_relaxed)) {
      // relaxed: as in remember().
      live_blocks.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
  }
}

auto counted_alloc(std::size_t n) -> void* {
  if (void* p = std::malloc(n == 0 ? 1 : n); p != nullptr) {
    if (watched(n)) {
      remember(p);
    }
    return p;
  }
  throw std::bad_alloc();
}

auto counted_alloc_aligned(std::size_t n, std::align_val_t al) -> void* {
  auto const a = static_cast<std::size_t>(al);
  std::size_t const rounded = ((n == 0 ? 1 : n) + a - 1) / a * a;
  if (void* p = std::aligned_alloc(a, rounded); p != nullptr) {
    if (watched(n)) {
      remember(p);
    }
    return p;
  }
  throw std::bad_alloc();
}

void counted_free(void* p) noexcept {
  if (p == nullptr) {
    return;
  }
  forget(p);
  // As track_allocations.hpp: the race detector forgets the block, which may be reused.
  model::forget_memory(p, ::malloc_usable_size(p));
  std::free(p);
}

auto live() -> std::int64_t {
  // relaxed: as in remember().
  return live_blocks.load(std::memory_order_relaxed);
}

/// Runs `scenario` (which makes and destroys its executor) and checks that every watched block
/// it allocated was freed; `expected` watched blocks must have been made (so that the test
/// notices if the sizes stop matching the nodes).
void without_leaks(int expected, std::function<void()> const& scenario) {
  auto const before = live();
  // relaxed: as in remember().
  auto const made_before = made_blocks.load(std::memory_order_relaxed);
  scenario();
  model::check(made_blocks.load(std::memory_order_relaxed) - made_before >= expected,
               "the test's task nodes were not watched: their sizes changed");
  model::check(!table_overflow.load(std::memory_order_relaxed), "the table of live blocks is full");
  model::check(live() == before, "a cancelled or finished task left its allocation behind");
}

/// A coroutine with a frame of its own size (above frame_pad): the array lives across the
/// suspension, so it is kept in the frame.
auto wait_for_gate(spindle::receiver<int> gate) -> spindle::task<int> {
  std::array<unsigned char, frame_pad> pad{};
  auto v = co_await gate.async_recv();
  co_return v ? *v + pad[0] : -1;
}

/// Measures the coroutine's frame (frame_bytes), outside any model execution.
void measure_frame() {
  // relaxed (all): this thread only, before its explorations start.
  if (frame_bytes.load(std::memory_order_relaxed) != 0) {
    return;
  }
  auto [tx, rx] = spindle::bounded<int>(1);
  probing.store(true, std::memory_order_relaxed);
  // Kept in a static for the moment, so that the compiler cannot elide the frame's allocation
  // (clang does for a coroutine that never escapes its caller).
  static std::optional<spindle::task<int>> kept;
  kept.emplace(wait_for_gate(rx));
  kept.reset();
  probing.store(false, std::memory_order_relaxed);
  frame_bytes.store(probed_size.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

}  // namespace

auto operator new(std::size_t n) -> void* {
  return counted_alloc(n);
}
auto operator new[](std::size_t n) -> void* {
  return counted_alloc(n);
}
auto operator new(std::size_t n, std::align_val_t al) -> void* {
  return counted_alloc_aligned(n, al);
}
auto operator new[](std::size_t n, std::align_val_t al) -> void* {
  return counted_alloc_aligned(n, al);
}
auto operator new(std::size_t n, std::nothrow_t const& /*tag*/) noexcept -> void* {
  try {
    return counted_alloc(n);
  } catch (...) {
    return nullptr;
  }
}
auto operator new[](std::size_t n, std::nothrow_t const& /*tag*/) noexcept -> void* {
  try {
    return counted_alloc(n);
  } catch (...) {
    return nullptr;
  }
}
auto operator new(std::size_t n, std::align_val_t al, std::nothrow_t const& /*tag*/) noexcept
    -> void* {
  try {
    return counted_alloc_aligned(n, al);
  } catch (...) {
    return nullptr;
  }
}
auto operator new[](std::size_t n, std::align_val_t al, std::nothrow_t const& /*tag*/) noexcept
    -> void* {
  try {
    return counted_alloc_aligned(n, al);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept {
  counted_free(p);
}
void operator delete[](void* p) noexcept {
  counted_free(p);
}
void operator delete(void* p, std::size_t /*n*/) noexcept {
  counted_free(p);
}
void operator delete[](void* p, std::size_t /*n*/) noexcept {
  counted_free(p);
}
void operator delete(void* p, std::align_val_t /*al*/) noexcept {
  counted_free(p);
}
void operator delete[](void* p, std::align_val_t /*al*/) noexcept {
  counted_free(p);
}
void operator delete(void* p, std::size_t /*n*/, std::align_val_t /*al*/) noexcept {
  counted_free(p);
}
void operator delete[](void* p, std::size_t /*n*/, std::align_val_t /*al*/) noexcept {
  counted_free(p);
}
void operator delete(void* p, std::nothrow_t const& /*tag*/) noexcept {
  counted_free(p);
}
void operator delete[](void* p, std::nothrow_t const& /*tag*/) noexcept {
  counted_free(p);
}
void operator delete(void* p, std::align_val_t /*al*/, std::nothrow_t const& /*tag*/) noexcept {
  counted_free(p);
}
void operator delete[](void* p, std::align_val_t /*al*/, std::nothrow_t const& /*tag*/) noexcept {
  counted_free(p);
}

// The counter itself: a task that runs, and one whose handle is dropped, leave nothing behind.
TEST(ModelCancelLeak, FinishedTasksLeaveNothingBehind) {
  explore_three("no leak: spawn, join and detach", 401, 100, [] {
    without_leaks(2, [] {
      spindle::executor ex(1);
      auto h = ex.spawn(padded_fn{.value = 1});
      ex.spawn(padded_fn{.value = 2}).detach();
      model::check(h.join() == 1, "join returned another task's value");
    });
  });
}

// join_handle::cancel() races the worker's start; the handle is joined or dropped. Whichever
// side wins, the node (and the stored task_cancelled) is freed once both references are gone.
TEST(ModelCancelLeak, CancelledJoinHandleFreesTheNode) {
  for (bool join : {true, false}) {
    explore_three(join ? "no leak: cancel races start, then join"
                       : "no leak: cancel races start, handle dropped",
                  411, 200, [join] {
                    without_leaks(1, [join] {
                      spindle::executor ex(1);
                      auto h = ex.spawn(padded_fn{.value = 7});
                      bool const cancelled = h.cancel();
                      if (join) {
                        bool threw = false;
                        try {
                          model::check(h.join() == 7, "join returned another task's value");
                        } catch (spindle::task_cancelled const&) {
                          threw = true;
                        }
                        model::check(threw == cancelled, "join disagrees with cancel()");
                      }
                    });
                  });
  }
}

// Cancelled while the only worker runs another task: the worker that later pops the node
// finds it cancelled, on every schedule (the path where the seeded bug leaks).
TEST(ModelCancelLeak, TaskCancelledWhileTheWorkerIsBusyFreesTheNode) {
  explore_three("no leak: cancel while the worker is busy", 421, 200, [] {
    without_leaks(1, [] {
      auto [gate_tx, gate_rx] = spindle::bounded<int>(1);
      auto [started_tx, started_rx] = spindle::bounded<int>(1);
      spindle::executor ex(1);
      ex.post([rx = gate_rx, tx = started_tx]() mutable {
        model::check(tx.send(1).is_sent(), "started: send failed");
        static_cast<void>(rx.recv());
      });
      model::check(started_rx.recv().has_value(), "the gate task did not start");
      auto h = ex.spawn(padded_fn{.value = 3});
      model::check(h.cancel(), "cancel() lost to a worker that is busy elsewhere");
      model::check(gate_tx.send(0).is_sent(), "gate: send failed");
      h = {};
    });
  });
}

// Executor shutdown with cancelled tasks still queued: shutdown finishes the queue, and each
// node is freed by the worker's release after its handle was dropped.
TEST(ModelCancelLeak, ShutdownWithCancelledTasksQueuedFreesThem) {
  explore_three("no leak: shutdown with cancelled tasks queued", 431, 200, [] {
    without_leaks(2, [] {
      spindle::executor ex(1);
      auto a = ex.spawn(padded_fn{.value = 1});
      auto b = ex.spawn(padded_fn{.value = 2});
      static_cast<void>(b.cancel());
      static_cast<void>(a.cancel());
      a = {};
      b = {};
      ex.shutdown();
    });
  });
}

// task_group::cancel() racing the group's tasks: skipped tasks are freed as run ones are.
TEST(ModelCancelLeak, CancelledTaskGroupFreesSkippedTasks) {
  explore_three("no leak: task_group cancel races its tasks", 441, 200, [] {
    without_leaks(2, [] {
      spindle::executor ex(1);
      spindle::task_group g(ex);
      g.spawn(padded_void_fn{});
      g.spawn(padded_void_fn{});
      g.cancel();
      static_cast<void>(g.wait());
    });
  });
}

// A coroutine cancelled by its handle (before it starts, its frame is destroyed unrun; once it
// waits, the wait ends with task_cancelled), beside one detached: both frames are freed.
TEST(ModelCancelLeak, CoroutineCancelledByItsHandleFreesItsFrame) {
  measure_frame();
  explore_three("no leak: coroutine cancelled by its handle", 451, 200, [] {
    without_leaks(2, [] {
      auto [gate_tx, gate_rx] = spindle::bounded<int>(1);
      spindle::executor ex(1);
      auto h = ex.spawn(wait_for_gate(gate_rx));
      auto d = ex.spawn(wait_for_gate(gate_rx));
      // Nothing ends it before the gate opens, so the request reaches it.
      model::check(h.cancel(), "cancel() refused a coroutine that had not ended");
      model::check(gate_tx.send(5).is_sent(), "gate: send failed");
      gate_tx.close();
      d.detach();
      int v = -2;
      try {
        v = h.join();
      } catch (spindle::task_cancelled const&) {
        v = -1;
      }
      model::check(v == 5 || v == -1, "the coroutine returned something it was not sent");
    });
  });
}
