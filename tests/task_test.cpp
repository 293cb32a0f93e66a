// Tests for spindle/task.hpp and the coroutine side of spindle/executor.hpp: lazy tasks and
// sync_wait, values, void, exceptions and move-only results through co_await, a flat stack
// across a million awaits (symmetric transfer), the lifetime of a task that never starts,
// misuse reported in every build, `co_await ex.schedule()`, and ex.spawn(task) with its
// join_handle joined from a thread or awaited from a coroutine.

#include <spindle/executor.hpp>
#include <spindle/join_handle.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/sizes.hpp"
#include "support/tracked.hpp"

namespace {

using namespace std::chrono_literals;
using spindle_test::tracked;

// ---- Coroutines the tests run ----------------------------------------------------------------

auto answer() -> spindle::task<int> {
  co_return 42;
}

auto twice() -> spindle::task<int> {
  int const a = co_await answer();
  co_return 2 * a;
}

auto set_flag(bool* flag) -> spindle::task<> {
  *flag = true;
  co_return;
}

auto thrower(std::string what) -> spindle::task<int> {
  throw std::runtime_error(what);
  co_return 0;  // unreachable; makes this function a coroutine
}

auto void_thrower() -> spindle::task<> {
  throw std::runtime_error("void task");
  co_return;
}

// Awaits an existing task object (lvalue co_await).
auto await_ref(spindle::task<int>& t) -> spindle::task<int> {
  co_return co_await t;
}

// Awaits a join handle from a coroutine.
template <class R>
auto await_handle(spindle::join_handle<R>& h) -> spindle::task<R> {
  co_return co_await h;
}

auto make_unique_int(int v) -> spindle::task<std::unique_ptr<int>> {
  co_return std::make_unique<int>(v);
}

auto make_tracked(std::uint64_t id) -> spindle::task<tracked> {
  co_return tracked(id);
}

auto pass_through(tracked t) -> spindle::task<tracked> {
  tracked inner = co_await make_tracked(t.id() + 1);
  co_return tracked(t.id() + inner.id());
}

// Symmetric transfer keeps the stack flat only where the compiler turns the transfer into a tail
// call: clang++ always does, g++ 12 from -O2 (and -Os) up, not at -O0, -Og or -O1, where these
// tests overflow the stack (README.md states it). g++'s ThreadSanitizer instrumentation calls a
// function-exit hook after every call, so no call is in tail position and each transfer costs a
// stack frame: under it the chains are shortened to fit the stack, and only their results are
// checked.
constexpr bool stack_is_flat = !spindle_test::under_thread_sanitizer;
constexpr int chain_length = stack_is_flat ? 1'000'000 : 4'000;

// The caller's frame address, for measuring how deep the stack is where a coroutine runs.
auto stack_address() noexcept -> std::uintptr_t {
  return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
}

auto distance(std::uintptr_t a, std::uintptr_t b) noexcept -> std::uintptr_t {
  return a > b ? a - b : b - a;
}

// `depth` nested co_awaits: each level awaits the next; the innermost records its stack address.
auto nested(int depth, std::uintptr_t* innermost) -> spindle::task<int> {
  if (depth == 0) {
    *innermost = stack_address();
    co_return 0;
  }
  co_return 1 + co_await nested(depth - 1, innermost);
}

auto one() -> spindle::task<int> {
  co_return 1;
}

// `count` co_awaits in a row of tasks that complete without suspending: without symmetric
// transfer each completion would resume the awaiter one frame deeper.
auto sequential(int count, std::uintptr_t* deepest) -> spindle::task<long> {
  long sum = 0;
  for (int i = 0; i < count; ++i) {
    sum += co_await one();
    if (i % 1024 == 0) {
      auto const here = stack_address();
      if (*deepest == 0 || here < *deepest) {
        *deepest = here;
      }
    }
  }
  co_return sum;
}

// Holds its arguments in its frame.
auto holds(tracked a, std::unique_ptr<tracked> b) -> spindle::task<std::uint64_t> {
  co_return a.id() + b->id();
}

auto where_am_i(spindle::executor& ex) -> spindle::task<std::pair<bool, bool>> {
  bool const before = ex.is_worker_thread();
  co_await ex.schedule();
  co_return std::pair<bool, bool>(before, ex.is_worker_thread());
}

auto spawn_and_await(spindle::executor& ex) -> spindle::task<int> {
  auto h = ex.spawn(twice());
  int const v = co_await h;
  co_return v + 1;
}

auto spawned_fib(spindle::executor& ex, int n) -> spindle::task<long> {
  if (n < 2) {
    co_return n;
  }
  auto left = ex.spawn(spawned_fib(ex, n - 1));
  long const right = co_await spawned_fib(ex, n - 2);
  co_return co_await left + right;
}

auto catch_from_handle(spindle::join_handle<int>& h) -> spindle::task<std::string> {
  try {
    static_cast<void>(co_await h);
  } catch (std::runtime_error const& e) {
    co_return e.what();
  }
  co_return "no exception";
}

/// Waits up to `limit` for `h` to finish; a task that never finishes is a deadlock, reported as
/// such (the executor's destructor would otherwise wait for it forever).
template <class R>
void finish_within(spindle::join_handle<R> const& h, std::chrono::seconds limit, char const* what) {
  auto const deadline = std::chrono::steady_clock::now() + limit;
  while (!h.is_ready()) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "deadlock: %s did not finish within %llds\n", what,
                   static_cast<long long>(limit.count()));
      std::abort();
    }
    std::this_thread::sleep_for(1ms);
  }
}

}  // namespace

// ---- task and sync_wait ----------------------------------------------------------------------

// The usage in one place: a task awaits another; sync_wait runs it from a plain thread.
TEST(Task, Example) {
  EXPECT_EQ(spindle::sync_wait(twice()), 84);
}

// A value task returns its co_return value through sync_wait.
TEST(Task, ValueTaskReturnsItsValue) {
  EXPECT_EQ(spindle::sync_wait(answer()), 42);
}

// A void task runs its body to the end under sync_wait.
TEST(Task, VoidTaskRunsToTheEnd) {
  bool flag = false;
  spindle::sync_wait(set_flag(&flag));
  EXPECT_TRUE(flag);
}

// A task is lazy: creating it runs nothing; awaiting it does.
TEST(Task, DoesNothingUntilAwaited) {
  bool flag = false;
  auto t = set_flag(&flag);
  EXPECT_TRUE(t.valid());
  EXPECT_FALSE(t.is_ready());
  EXPECT_FALSE(flag);
  spindle::sync_wait(std::move(t));
  EXPECT_TRUE(flag);
}

// co_await of an lvalue task runs it; afterwards the task object is ready and still owns the
// finished frame.
TEST(Task, AwaitingAnLvalueTaskLeavesItReady) {
  auto inner = answer();
  EXPECT_EQ(spindle::sync_wait(await_ref(inner)), 42);
  EXPECT_TRUE(inner.valid());
  EXPECT_TRUE(inner.is_ready());
}

// A default-constructed or moved-from task is empty.
TEST(Task, EmptyTasksAreNotValid) {
  spindle::task<int> empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_FALSE(empty.is_ready());
  auto t = answer();
  auto moved = std::move(t);
  EXPECT_FALSE(t.valid());  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(moved.valid());
}

// An exception thrown in an awaited task reaches the awaiting coroutine, which may catch it.
TEST(Task, ExceptionFlowsToTheAwaiter) {
  auto catcher = []() -> spindle::task<std::string> {
    try {
      static_cast<void>(co_await thrower("inner"));
    } catch (std::runtime_error const& e) {
      co_return std::string("caught ") + e.what();
    }
    co_return "not caught";
  };
  EXPECT_EQ(spindle::sync_wait(catcher()), "caught inner");
}

// An exception nobody catches inside leaves sync_wait, from value and void tasks alike, and
// through a chain of awaits.
TEST(Task, UncaughtExceptionLeavesSyncWait) {
  EXPECT_THROW(spindle::sync_wait(thrower("out")), std::runtime_error);
  EXPECT_THROW(spindle::sync_wait(void_thrower()), std::runtime_error);
  auto chain = []() -> spindle::task<int> { co_return 1 + co_await thrower("deep"); };
  EXPECT_THROW(spindle::sync_wait(chain()), std::runtime_error);
}

// A move-only result travels through co_await and sync_wait; no tracked value is lost or
// destroyed twice.
TEST(Task, MoveOnlyResult) {
  auto const before = tracked::live();
  auto p = spindle::sync_wait(make_unique_int(7));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 7);
  {
    tracked const t = spindle::sync_wait(pass_through(tracked(10)));
    EXPECT_EQ(t.id(), 21U);
  }
  EXPECT_EQ(tracked::live(), before);
}

// A chain of a million nested co_awaits runs with a flat stack: the innermost coroutine runs
// at about the depth of the outermost (symmetric transfer in both directions).
TEST(Task, MillionNestedAwaitsDoNotGrowTheStack) {
  std::uintptr_t innermost = 0;
  auto const outside = stack_address();
  EXPECT_EQ(spindle::sync_wait(nested(chain_length, &innermost)), chain_length);
  ASSERT_NE(innermost, 0U);
  if constexpr (stack_is_flat) {
    // A few frames of sync_wait and the resume path; a growing stack would be tens of megabytes.
    EXPECT_LT(distance(outside, innermost), 64U * 1024U);
  }
}

// A million co_awaits in a row of tasks that complete at once run with a flat stack.
TEST(Task, MillionSequentialAwaitsDoNotGrowTheStack) {
  std::uintptr_t deepest = 0;
  auto const outside = stack_address();
  EXPECT_EQ(spindle::sync_wait(sequential(chain_length, &deepest)), chain_length);
  ASSERT_NE(deepest, 0U);
  if constexpr (stack_is_flat) {
    EXPECT_LT(distance(outside, deepest), 64U * 1024U);
  }
}

// A task destroyed without being started destroys its frame and every argument in it.
TEST(Task, UnstartedTaskDestroysItsArguments) {
  auto const before = tracked::live();
  {
    auto t = holds(tracked(1), std::make_unique<tracked>(2));
    EXPECT_EQ(tracked::live(), before + 2);  // both arguments live in the frame
  }
  EXPECT_EQ(tracked::live(), before);
  // Move-assigning over an unstarted task destroys the old frame too.
  {
    auto t = holds(tracked(3), std::make_unique<tracked>(4));
    t = holds(tracked(5), std::make_unique<tracked>(6));
    EXPECT_EQ(tracked::live(), before + 2);
  }
  EXPECT_EQ(tracked::live(), before);
  // A task that ran destroys its arguments too.
  EXPECT_EQ(spindle::sync_wait(holds(tracked(7), std::make_unique<tracked>(8))), 15U);
  EXPECT_EQ(tracked::live(), before);
}

// ---- Misuse ----------------------------------------------------------------------------------

namespace {

class TaskMisuseDeathTest : public testing::Test {
 protected:
  // Threadsafe: the child re-runs the test from the start instead of forking a process that
  // may hold other threads' locks.
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

constexpr char const* await_misuse =
    "misuse: co_await on an empty or already awaited spindle::task";
constexpr char const* sync_wait_misuse =
    "misuse: spindle::sync_wait on an empty or already started";
constexpr char const* spawn_misuse = "misuse: spindle::executor::spawn of an empty or already";

}  // namespace

// co_await of a moved-from or default-constructed task is reported and aborts.
TEST_F(TaskMisuseDeathTest, AwaitingAnEmptyTaskAborts) {
  auto t = answer();
  auto kept = std::move(t);
  EXPECT_DEATH(static_cast<void>(spindle::sync_wait(await_ref(t))), await_misuse);
  spindle::task<int> empty;
  EXPECT_DEATH(static_cast<void>(spindle::sync_wait(await_ref(empty))), await_misuse);
}

// co_await of a task that was already awaited is reported and aborts.
TEST_F(TaskMisuseDeathTest, AwaitingATaskTwiceAborts) {
  auto t = answer();
  EXPECT_EQ(spindle::sync_wait(await_ref(t)), 42);
  EXPECT_DEATH(static_cast<void>(spindle::sync_wait(await_ref(t))), await_misuse);
}

// sync_wait of a moved-from, default-constructed or finished task is reported and aborts.
TEST_F(TaskMisuseDeathTest, SyncWaitOfAnEmptyOrStartedTaskAborts) {
  auto t = answer();
  auto kept = std::move(t);
  EXPECT_DEATH(static_cast<void>(spindle::sync_wait(std::move(t))), sync_wait_misuse);
  EXPECT_DEATH(static_cast<void>(spindle::sync_wait(spindle::task<int>())), sync_wait_misuse);
  EXPECT_EQ(spindle::sync_wait(await_ref(kept)), 42);
  EXPECT_DEATH(static_cast<void>(spindle::sync_wait(std::move(kept))), sync_wait_misuse);
}

// Spawning a task that was already awaited, or an empty one, is reported and aborts.
TEST_F(TaskMisuseDeathTest, SpawningAnAwaitedOrEmptyTaskAborts) {
  spindle::executor ex{1};
  auto t = answer();
  EXPECT_EQ(spindle::sync_wait(await_ref(t)), 42);
  EXPECT_DEATH(static_cast<void>(ex.spawn(std::move(t))), spawn_misuse);
  EXPECT_DEATH(static_cast<void>(ex.spawn(spindle::task<int>())), spawn_misuse);
}

// ---- Tasks on an executor --------------------------------------------------------------------

// `co_await ex.schedule()` moves a coroutine from the sync_wait thread onto a worker.
TEST(TaskOnExecutor, ScheduleMovesTheCoroutineOntoAWorker) {
  spindle::executor ex{2};
  auto const [before, after] = spindle::sync_wait(where_am_i(ex));
  EXPECT_FALSE(before);
  EXPECT_TRUE(after);
}

// A coroutine already on the executor that awaits schedule() yields and stays on a worker.
TEST(TaskOnExecutor, ScheduleFromAWorkerStaysOnTheExecutor) {
  spindle::executor ex{1};
  auto body = [](spindle::executor& e) -> spindle::task<int> {
    int on_worker = 0;
    for (int i = 0; i < 100; ++i) {
      co_await e.schedule();
      on_worker += e.is_worker_thread() ? 1 : 0;
    }
    co_return on_worker;
  };
  auto h = ex.spawn(body(ex));
  EXPECT_EQ(h.join(), 100);
}

// A spawned coroutine runs on a worker; join() from a thread returns its value.
TEST(TaskOnExecutor, SpawnReturnsAHandleJoinedFromAThread) {
  spindle::executor ex{2};
  auto on_worker = [](spindle::executor& e) -> spindle::task<bool> {
    co_return e.is_worker_thread();
  };
  auto h = ex.spawn(on_worker(ex));
  EXPECT_TRUE(h.valid());
  EXPECT_TRUE(h.join());
  EXPECT_FALSE(h.valid());

  // From another plain thread too, and for void.
  bool flag = false;
  auto v = ex.spawn(set_flag(&flag));
  auto w = ex.spawn(twice());
  int got = 0;
  std::thread joiner([&] {
    v.join();
    got = w.join();
  });
  joiner.join();
  EXPECT_TRUE(flag);
  EXPECT_EQ(got, 84);
}

// A coroutine awaits a join handle: from the sync_wait thread and from another spawned
// coroutine.
TEST(TaskOnExecutor, AnotherCoroutineAwaitsTheHandle) {
  spindle::executor ex{2};
  auto h = ex.spawn(twice());
  EXPECT_EQ(spindle::sync_wait(await_handle(h)), 84);
  EXPECT_FALSE(h.valid());

  auto outer = ex.spawn(spawn_and_await(ex));
  EXPECT_EQ(outer.join(), 85);
}

// The sync_wait coroutine resumes on the sync_wait thread after awaiting a handle that a
// worker completes.
TEST(TaskOnExecutor, AwaitingAHandleResumesOnTheSyncWaitThread) {
  spindle::executor ex{2};
  auto const main_id = std::this_thread::get_id();
  auto body = [](spindle::executor& e) -> spindle::task<std::thread::id> {
    auto h = e.spawn([](spindle::executor& e2) -> spindle::task<int> {
      co_await e2.schedule();  // yields once on the worker, so the awaiter likely suspends
      co_return 1;
    }(e));
    static_cast<void>(co_await h);
    co_return std::this_thread::get_id();
  };
  EXPECT_EQ(spindle::sync_wait(body(ex)), main_id);
}

// An exception thrown by a spawned coroutine comes out of join() and out of co_await.
TEST(TaskOnExecutor, ExceptionsGoThroughTheHandle) {
  spindle::executor ex{2};
  auto joined = ex.spawn(thrower("joined"));
  EXPECT_THROW(static_cast<void>(joined.join()), std::runtime_error);
  auto v = ex.spawn(void_thrower());
  EXPECT_THROW(v.join(), std::runtime_error);
  auto awaited = ex.spawn(thrower("awaited"));
  EXPECT_EQ(spindle::sync_wait(catch_from_handle(awaited)), "awaited");
}

// co_await of an empty join handle (default-constructed, or joined already) throws
// std::logic_error in the awaiting coroutine.
TEST(TaskOnExecutor, AwaitingAnEmptyHandleThrowsLogicError) {
  spindle::executor ex{1};
  spindle::join_handle<int> empty;
  EXPECT_THROW(static_cast<void>(spindle::sync_wait(await_handle(empty))), std::logic_error);
  auto h = ex.spawn(answer());
  EXPECT_EQ(h.join(), 42);
  EXPECT_THROW(static_cast<void>(spindle::sync_wait(await_handle(h))), std::logic_error);
  auto a = ex.spawn(answer());
  EXPECT_EQ(spindle::sync_wait(await_handle(a)), 42);
  EXPECT_THROW(static_cast<void>(spindle::sync_wait(await_handle(a))), std::logic_error);
}

// On a one-worker executor, a coroutine that awaits a task spawned on the same executor does
// not deadlock: awaiting the handle suspends it and frees the only worker for the child.
TEST(TaskOnExecutor, AwaitingASiblingOnOneWorkerDoesNotDeadlock) {
  spindle::executor ex{1};
  auto h = ex.spawn(spawn_and_await(ex));
  finish_within(h, 30s, "a coroutine awaiting a sibling on one worker");
  EXPECT_EQ(h.join(), 85);
}

// A tree of coroutines that spawn and await each other on one worker finishes.
TEST(TaskOnExecutor, SpawnTreeOnOneWorkerFinishes) {
  spindle::executor ex{1};
  auto h = ex.spawn(spawned_fib(ex, 15));
  finish_within(h, 30s, "a spawn tree on one worker");
  EXPECT_EQ(h.join(), 610);
}

// A spawned coroutine's result and frame are destroyed exactly once, whether the handle is
// joined or detached.
TEST(TaskOnExecutor, SpawnedResultsAreDestroyedOnce) {
  auto const before = tracked::live();
  {
    spindle::executor ex{2};
    auto h = ex.spawn(pass_through(tracked(1)));
    EXPECT_EQ(h.join().id(), 3U);
    for (std::uint64_t i = 0; i < 100; ++i) {
      static_cast<void>(ex.spawn(pass_through(tracked(i))));  // detached
    }
  }
  EXPECT_EQ(tracked::live(), before);
}

// A join handle outlives its executor: shutdown finished the coroutine.
TEST(TaskOnExecutor, HandleMayOutliveItsExecutor) {
  spindle::join_handle<int> h;
  {
    spindle::executor ex{2};
    h = ex.spawn(twice());
  }
  EXPECT_TRUE(h.is_ready());
  EXPECT_EQ(h.join(), 84);
}
