// Tests for what spindle::dump shows of coroutines (spindle/dump.hpp): the listed coroutines
// (named ones, or every one with executor_options::list_coroutines), what each is suspended
// on, the count of coroutines waiting on each channel or primitive, and the task a join waits
// for, named, both for a worker inside a join and for a coroutine awaiting a join handle.
//
// As in dump_test.cpp, each wait is made on purpose and the tests wait (eventually) until the
// dump shows it, never for a fixed time; then they release it and end cleanly.

#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/dump.hpp>
#include <spindle/executor.hpp>
#include <spindle/mutex.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>
#include <spindle/task_group.hpp>
#include <spindle/when.hpp>

#include "support/eventually.hpp"
#include "support/test_gate.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using namespace std::chrono_literals;
using spindle_test::eventually;
using spindle_test::opens_at_exit;
using spindle_test::test_gate;

/// The listed coroutine named `name`, or nullptr.
auto listed(spindle::executor_dump const& d, std::string const& name)
    -> spindle::coroutine_dump const* {
  for (auto const& c : d.listed_coroutines) {
    if (c.name == name) {
      return &c;
    }
  }
  return nullptr;
}

/// Whether the coroutine `name` is listed as suspended in a wait of kind `k`.
auto suspended_in(spindle::executor_dump const& d, std::string const& name, spindle::wait_kind k)
    -> bool {
  auto const* c = listed(d, name);
  return c != nullptr && c->state == spindle::coroutine_state::suspended && c->wait.kind == k;
}

/// The count of listed coroutines waiting on `object` in a wait of kind `k`.
auto waiting_on(spindle::executor_dump const& d, std::uintptr_t object, spindle::wait_kind k)
    -> std::size_t {
  for (auto const& w : d.waiters) {
    if (w.object == object && w.kind == k) {
      return w.coroutines;
    }
  }
  return 0;
}

/// The wait of the outermost task named `name` on any worker, or a default wait_dump.
auto task_wait(spindle::executor_dump const& d, std::string const& name) -> spindle::wait_dump {
  for (auto const& w : d.workers) {
    if (!w.stack.empty() && w.stack.front().name == name) {
      return w.stack.front().waits_for;
    }
  }
  return {};
}

auto receive(spindle::receiver<int> rx) -> spindle::task<int> {
  auto v = co_await rx.async_recv();
  co_return v.value_or(-1);
}

auto send_two(spindle::sender<int> tx) -> spindle::task<void> {
  static_cast<void>(co_await tx.async_send(1));
  static_cast<void>(co_await tx.async_send(2));
}

auto await_handle(spindle::join_handle<int> h) -> spindle::task<int> {
  co_return co_await h;
}

auto sleep_long() -> spindle::task<void> {
  co_await spindle::sleep_for(1h);
}

TEST(DumpCoroutines, ANamedCoroutineShowsTheChannelItWaitsOn) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(4);
  auto h = ex.spawn(receive(rx), spindle::name("reader"));
  ASSERT_TRUE(eventually(
      [&] { return suspended_in(spindle::snapshot(ex), "reader", spindle::wait_kind::recv); }));
  spindle::executor_dump const d = spindle::snapshot(ex);
  auto const* c = listed(d, "reader");
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->id, 0U);
  EXPECT_NE(c->wait.object, 0U);
  EXPECT_EQ(waiting_on(d, c->wait.object, spindle::wait_kind::recv), 1U);

  std::string const text = spindle::to_text(d);
  EXPECT_NE(text.find("coroutine \"reader\" #" + std::to_string(c->id) + ": suspended, recv on 0x"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("waiting in recv on 0x"), std::string::npos) << text;
  EXPECT_NE(text.find(": 1 coroutine, 0 threads"), std::string::npos) << text;
  std::string const json = spindle::to_json(d);
  EXPECT_NE(json.find("\"name\":\"reader\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"state\":\"suspended\",\"wait\":{\"kind\":\"recv\""), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"waiters\":[{\"object\":\"0x"), std::string::npos) << json;

  ASSERT_TRUE(tx.send(7).is_sent());
  EXPECT_EQ(h.join(), 7);
  // An ended coroutine is no longer listed.
  EXPECT_EQ(listed(spindle::snapshot(ex), "reader"), nullptr);
  EXPECT_TRUE(spindle::snapshot(ex).waiters.empty());
}

TEST(DumpCoroutines, AResumedCoroutineShowsRunning) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(4);
  std::atomic<bool> received{false};
  std::atomic<bool> release{false};
  auto body = [](spindle::receiver<int> r, std::atomic<bool>& got,
                 std::atomic<bool>& go) -> spindle::task<int> {
    auto v = co_await r.async_recv();
    got.store(true);
    // Running (on a worker) and in no wait a dump knows of.
    while (!go.load()) {
      std::this_thread::yield();
    }
    co_return v.value_or(-1);
  };
  auto h = ex.spawn(body(rx, received, release), spindle::name("busy"));
  ASSERT_TRUE(eventually(
      [&] { return suspended_in(spindle::snapshot(ex), "busy", spindle::wait_kind::recv); }));
  ASSERT_TRUE(tx.send(6).is_sent());
  ASSERT_TRUE(eventually([&] { return received.load(); }));
  spindle::executor_dump const d = spindle::snapshot(ex);
  auto const* c = listed(d, "busy");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->state, spindle::coroutine_state::running);
  EXPECT_EQ(c->wait.kind, spindle::wait_kind::none);
  EXPECT_TRUE(d.waiters.empty());
  release.store(true);
  EXPECT_EQ(h.join(), 6);
}

TEST(DumpCoroutines, AnEndedCoroutineLeavesTheListBeforeItIsJoined) {
  spindle::executor ex(2);
  auto quick = []() -> spindle::task<int> { co_return 2; };
  auto h = ex.spawn(quick(), spindle::name("quick"));
  // The handle still holds the coroutine's result; the coroutine itself has ended.
  ASSERT_TRUE(eventually([&] { return spindle::snapshot(ex).listed_coroutines.empty(); }));
  EXPECT_EQ(h.join(), 2);
}

TEST(DumpCoroutines, CountsEveryCoroutineWaitingOnOneChannel) {
  spindle::executor ex(spindle::executor_options().workers(2).list_coroutines(true));
  auto [tx, rx] = spindle::bounded<int>(4);
  auto a = ex.spawn(receive(rx));
  auto b = ex.spawn(receive(rx));
  auto c = ex.spawn(receive(rx));
  std::uintptr_t object = 0;
  ASSERT_TRUE(eventually([&] {
    spindle::executor_dump const d = spindle::snapshot(ex);
    if (d.listed_coroutines.size() != 3) {
      return false;
    }
    object = d.listed_coroutines[0].wait.object;
    return object != 0 && waiting_on(d, object, spindle::wait_kind::recv) == 3;
  }));
  // Unnamed but listed: an id, no name.
  spindle::executor_dump const d = spindle::snapshot(ex);
  for (auto const& l : d.listed_coroutines) {
    EXPECT_TRUE(l.name.empty());
    EXPECT_NE(l.id, 0U);
  }
  EXPECT_NE(spindle::to_text(d).find(": 3 coroutines, 0 threads"), std::string::npos);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(tx.send(i).is_sent());
  }
  EXPECT_EQ(a.join() + b.join() + c.join(), 0 + 1 + 2);
}

TEST(DumpCoroutines, UnnamedCoroutinesAreNotListedByDefault) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(4);
  auto h = ex.spawn(receive(rx));
  ASSERT_TRUE(eventually([&] { return spindle::snapshot(ex).coroutines == 1; }));
  EXPECT_TRUE(spindle::snapshot(ex).listed_coroutines.empty());
  ASSERT_TRUE(tx.send(1).is_sent());
  EXPECT_EQ(h.join(), 1);
}

TEST(DumpCoroutines, ASenderOnAFullChannelShowsSend) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(1);
  auto h = ex.spawn(send_two(tx), spindle::name("writer"));
  ASSERT_TRUE(eventually(
      [&] { return suspended_in(spindle::snapshot(ex), "writer", spindle::wait_kind::send); }));
  auto const d = spindle::snapshot(ex);
  EXPECT_EQ(waiting_on(d, listed(d, "writer")->wait.object, spindle::wait_kind::send), 1U);
  EXPECT_EQ(rx.recv(), std::optional<int>(1));
  EXPECT_EQ(rx.recv(), std::optional<int>(2));
  h.join();
}

TEST(DumpCoroutines, AJoinOfACoroutineNamesIt) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(4);
  auto reader = ex.spawn(receive(rx), spindle::name("reader"));
  auto joiner = ex.spawn(await_handle(std::move(reader)), spindle::name("joiner"));
  spindle::executor_dump d;
  ASSERT_TRUE(eventually([&] {
    d = spindle::snapshot(ex);
    return suspended_in(d, "joiner", spindle::wait_kind::join) &&
           suspended_in(d, "reader", spindle::wait_kind::recv);
  }));
  auto const* j = listed(d, "joiner");
  EXPECT_EQ(j->wait.task_name, "reader");
  EXPECT_EQ(j->wait.task_id, listed(d, "reader")->id);
  EXPECT_NE(spindle::to_text(d).find("suspended, join of \"reader\" #"), std::string::npos)
      << spindle::to_text(d);
  ASSERT_TRUE(tx.send(5).is_sent());
  EXPECT_EQ(joiner.join(), 5);
}

TEST(DumpCoroutines, AWorkerInAJoinNamesTheCoroutineItWaitsFor) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(4);
  auto reader = ex.spawn(receive(rx), spindle::name("reader"));
  auto outer = ex.spawn([&reader] { return reader.join(); }, spindle::name("outer"));
  auto shows = [](spindle::executor_dump const& d) {
    auto const f = task_wait(d, "outer");
    return f.kind == spindle::wait_kind::join && f.task_name == "reader";
  };
  ASSERT_TRUE(eventually([&] { return shows(spindle::snapshot(ex)); }));
  std::string const text = spindle::dump(ex);
  EXPECT_NE(text.find("\"outer\" #"), std::string::npos) << text;
  EXPECT_NE(text.find("(join of \"reader\" #"), std::string::npos) << text;
  ASSERT_TRUE(tx.send(3).is_sent());
  EXPECT_EQ(outer.join(), 3);
}

TEST(DumpCoroutines, AWorkerInAJoinNamesTheTaskItWaitsFor) {
  spindle::executor ex(2);
  test_gate gate;
  opens_at_exit const opener{gate};
  std::atomic<bool> started{false};
  auto outer = ex.spawn(
      [&] {
        auto inner = ex.spawn(
            [&] {
              started.store(true);
              gate.wait();
              return 4;
            },
            spindle::name("inner"));
        return inner.join();
      },
      spindle::name("outer"));
  auto shows = [](spindle::executor_dump const& d) {
    auto const f = task_wait(d, "outer");
    return f.kind == spindle::wait_kind::join && f.task_name == "inner" && f.task_id != 0;
  };
  ASSERT_TRUE(eventually([&] { return started.load() && shows(spindle::snapshot(ex)); }))
      << spindle::dump(ex);
  gate.open();
  EXPECT_EQ(outer.join(), 4);
  // The wait is over: no frame says it waits any more.
  auto const d = spindle::snapshot(ex);
  for (auto const& w : d.workers) {
    for (auto const& f : w.stack) {
      EXPECT_EQ(f.waits_for.kind, spindle::wait_kind::none);
    }
  }
}

TEST(DumpThreads, DumpAllNamesATaskOfAnotherExecutorThatAJoinWaitsFor) {
  spindle::executor a(1);
  spindle::executor b(1);
  test_gate gate;
  opens_at_exit const opener{gate};
  std::atomic<bool> started{false};
  auto inner = b.spawn(
      [&] {
        started.store(true);
        gate.wait();
        return 5;
      },
      spindle::name("across"));
  auto outer = a.spawn([&inner] { return inner.join(); }, spindle::name("joiner"));
  ASSERT_TRUE(eventually([&] {
    return started.load() && spindle::dump_all().find("\"joiner\" #") != std::string::npos &&
           spindle::dump_all().find("(join of \"across\" #") != std::string::npos;
  })) << spindle::dump_all();
  // One executor's own dump cannot name a task of another: it shows the task's address.
  EXPECT_NE(spindle::dump(a).find("(join of task 0x"), std::string::npos) << spindle::dump(a);
  EXPECT_NE(spindle::dump_all(spindle::dump_format::json).find("\"task_name\":\"across\""),
            std::string::npos);
  gate.open();
  EXPECT_EQ(outer.join(), 5);
}

TEST(DumpCoroutines, ASleepShowsAndACancelEndsIt) {
  spindle::executor ex(2);
  auto h = ex.spawn(sleep_long(), spindle::name("sleeper"));
  // A failed assertion must not leave the coroutine asleep for an hour in the shutdown.
  struct cancels_at_exit {
    spindle::join_handle<void>& handle;
    ~cancels_at_exit() { static_cast<void>(handle.cancel()); }
  } const canceller{h};
  ASSERT_TRUE(eventually(
      [&] { return suspended_in(spindle::snapshot(ex), "sleeper", spindle::wait_kind::sleep); }));
  EXPECT_TRUE(h.cancel());
  EXPECT_THROW(h.join(), spindle::task_cancelled);
  EXPECT_EQ(listed(spindle::snapshot(ex), "sleeper"), nullptr);
}

TEST(DumpCoroutines, ASelectShowsItsCases) {
  spindle::executor ex(2);
  auto [ta, ra] = spindle::bounded<int>(1);
  auto [tb, rb] = spindle::bounded<int>(1);
  auto body = [](spindle::receiver<int> a, spindle::receiver<int> b) -> spindle::task<int> {
    int got = 0;
    co_await spindle::async_select(
        spindle::on_recv(a, [&got](std::optional<int> v) { got = v.value_or(-1); }),
        spindle::on_recv(b, [&got](std::optional<int> v) { got = v.value_or(-1); }));
    co_return got;
  };
  auto h = ex.spawn(body(ra, rb), spindle::name("select"));
  spindle::executor_dump d;
  ASSERT_TRUE(eventually([&] {
    d = spindle::snapshot(ex);
    return suspended_in(d, "select", spindle::wait_kind::select);
  }));
  EXPECT_EQ(listed(d, "select")->wait.cases, 2U);
  EXPECT_NE(spindle::to_text(d).find("select of 2 cases (first on 0x"), std::string::npos)
      << spindle::to_text(d);
  ASSERT_TRUE(tb.send(9).is_sent());
  EXPECT_EQ(h.join(), 9);
}

TEST(DumpCoroutines, ATimedReceiveShowsAsAReceive) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(1);
  auto body = [](spindle::receiver<int> r) -> spindle::task<bool> {
    auto v = co_await r.async_recv_for(1h);
    co_return v.is_received();
  };
  auto h = ex.spawn(body(rx), spindle::name("timed"));
  ASSERT_TRUE(eventually(
      [&] { return suspended_in(spindle::snapshot(ex), "timed", spindle::wait_kind::recv); }));
  ASSERT_TRUE(tx.send(1).is_sent());
  EXPECT_TRUE(h.join());
}

TEST(DumpCoroutines, WhenAllShowsItsChildren) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(4);
  auto body = [](spindle::receiver<int> r) -> spindle::task<int> {
    auto [a, b] = co_await spindle::when_all(receive(r), receive(r));
    co_return a + b;
  };
  auto h = ex.spawn(body(rx), spindle::name("parent"));
  spindle::executor_dump d;
  ASSERT_TRUE(eventually([&] {
    d = spindle::snapshot(ex);
    return suspended_in(d, "parent", spindle::wait_kind::when_all);
  }));
  EXPECT_EQ(listed(d, "parent")->wait.cases, 2U);
  ASSERT_TRUE(tx.send(1).is_sent());
  ASSERT_TRUE(tx.send(2).is_sent());
  EXPECT_EQ(h.join(), 3);
}

TEST(DumpCoroutines, AMutexWaitShowsLock) {
  spindle::executor ex(2);
  spindle::mutex mu;
  auto body = [](spindle::mutex& m) -> spindle::task<int> {
    auto g = co_await m.async_lock();
    co_return 1;
  };
  std::optional<spindle::mutex_guard> held(mu.lock());
  auto h = ex.spawn(body(mu), spindle::name("locker"));
  ASSERT_TRUE(eventually(
      [&] { return suspended_in(spindle::snapshot(ex), "locker", spindle::wait_kind::lock); }));
  held.reset();
  EXPECT_EQ(h.join(), 1);
}

TEST(DumpCoroutines, AQueuedCoroutineShowsQueued) {
  spindle::executor ex(1);
  test_gate gate;
  opens_at_exit const opener{gate};
  std::atomic<bool> blocking{false};
  auto blocker = ex.spawn([&] {
    blocking.store(true);
    gate.wait();
  });
  ASSERT_TRUE(eventually([&] { return blocking.load(); }));
  auto [tx, rx] = spindle::bounded<int>(1);
  auto h = ex.spawn(receive(rx), spindle::name("waiting_its_turn"));
  auto const* c = listed(spindle::snapshot(ex), "waiting_its_turn");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(spindle::snapshot(ex).listed_coroutines.front().state,
            spindle::coroutine_state::queued);
  EXPECT_NE(spindle::dump(ex).find("\"waiting_its_turn\" #"), std::string::npos);
  // Cancelled before it starts: unlisted, never run.
  EXPECT_TRUE(h.cancel());
  EXPECT_THROW(h.join(), spindle::task_cancelled);
  EXPECT_TRUE(spindle::snapshot(ex).listed_coroutines.empty());
  gate.open();
  blocker.join();
}

TEST(DumpCoroutines, ATaskGroupTaskShowsItsName) {
  spindle::executor ex(2);
  spindle::task_group g(ex);
  test_gate gate;
  opens_at_exit const opener{gate};
  std::atomic<bool> started{false};
  g.spawn(
      [&] {
        started.store(true);
        gate.wait();
      },
      spindle::name("grouped"));
  ASSERT_TRUE(eventually([&] {
    return started.load() && spindle::dump(ex).find("\"grouped\" #") != std::string::npos;
  }));
  gate.open();
  g.wait();
}

TEST(DumpThreads, ATaskBlockedInARecvShowsTheChannelBesideItsCoroutines) {
  spindle::executor ex(3);
  auto [tx, rx] = spindle::bounded<int>(4);
  auto reader = ex.spawn(receive(rx), spindle::name("reader"));
  auto task =
      ex.spawn([r = rx]() mutable { return r.recv().value_or(-1); }, spindle::name("blocked"));
  spindle::executor_dump d;
  ASSERT_TRUE(eventually([&] {
    d = spindle::snapshot(ex);
    return task_wait(d, "blocked").kind == spindle::wait_kind::recv &&
           suspended_in(d, "reader", spindle::wait_kind::recv);
  }));
  // The thread and the coroutine wait on the same channel: one entry counts both.
  std::uintptr_t const object = task_wait(d, "blocked").object;
  EXPECT_EQ(object, listed(d, "reader")->wait.object);
  ASSERT_EQ(d.waiters.size(), 1U);
  EXPECT_EQ(d.waiters[0].coroutines, 1U);
  EXPECT_EQ(d.waiters[0].threads, 1U);
  std::string const text = spindle::to_text(d);
  EXPECT_NE(text.find("\"blocked\" #"), std::string::npos) << text;
  EXPECT_NE(text.find(" (recv on 0x"), std::string::npos) << text;
  EXPECT_NE(text.find(": 1 coroutine, 1 thread"), std::string::npos) << text;
  ASSERT_TRUE(tx.send(1).is_sent());
  ASSERT_TRUE(tx.send(2).is_sent());
  EXPECT_EQ(reader.join() + task.join(), 3);
  // Nothing waits any more.
  EXPECT_TRUE(spindle::snapshot(ex).waiters.empty());
}

TEST(DumpThreads, ATaskBlockedInASendShowsSend) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(1);
  ASSERT_TRUE(tx.send(0).is_sent());
  auto task = ex.spawn([t = tx]() mutable { return t.send(1).is_sent(); }, spindle::name("sender"));
  ASSERT_TRUE(eventually(
      [&] { return task_wait(spindle::snapshot(ex), "sender").kind == spindle::wait_kind::send; }));
  EXPECT_EQ(rx.recv(), std::optional<int>(0));
  EXPECT_TRUE(task.join());
}

TEST(DumpThreads, ATaskBlockedInASelectShowsItsCases) {
  spindle::executor ex(2);
  auto [ta, ra] = spindle::bounded<int>(1);
  auto [tb, rb] = spindle::bounded<int>(1);
  auto task = ex.spawn(
      [a = ra, b = rb]() mutable {
        int got = 0;
        spindle::select(spindle::on_recv(a, [&got](std::optional<int> v) { got = *v; }),
                        spindle::on_recv(b, [&got](std::optional<int> v) { got = *v; }));
        return got;
      },
      spindle::name("selector"));
  spindle::wait_dump w;
  ASSERT_TRUE(eventually([&] {
    w = task_wait(spindle::snapshot(ex), "selector");
    return w.kind == spindle::wait_kind::select;
  }));
  EXPECT_EQ(w.cases, 2U);
  ASSERT_TRUE(ta.send(8).is_sent());
  EXPECT_EQ(task.join(), 8);
}

TEST(DumpThreads, ATaskBlockedOnAMutexShowsLock) {
  spindle::executor ex(2);
  spindle::mutex mu;
  std::optional<spindle::mutex_guard> held(mu.lock());
  auto task = ex.spawn(
      [&mu] {
        auto g = mu.lock();
        return 1;
      },
      spindle::name("locker"));
  ASSERT_TRUE(eventually(
      [&] { return task_wait(spindle::snapshot(ex), "locker").kind == spindle::wait_kind::lock; }));
  held.reset();
  EXPECT_EQ(task.join(), 1);
}

TEST(DumpCoroutines, DumpsWhileListedCoroutinesComeAndGo) {
  spindle::executor ex(spindle::executor_options().workers(2).list_coroutines(true));
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> dumps{0};
  // Another thread takes dumps the whole time: every record it reads is alive, every wait it
  // sees is one a coroutine is in (TSan and ASan check the reads).
  std::thread dumper([&] {
    while (!stop.load()) {
      auto const d = spindle::snapshot(ex);
      for (auto const& c : d.listed_coroutines) {
        EXPECT_NE(c.id, 0U);
      }
      static_cast<void>(spindle::to_json(d));
      dumps.fetch_add(1);
    }
  });
  constexpr int rounds = 200;
  for (int round = 0; round < rounds; ++round) {
    auto [tx, rx] = spindle::bounded<int>(1);
    std::vector<spindle::join_handle<int>> readers;
    for (int i = 0; i < 4; ++i) {
      readers.push_back(ex.spawn(receive(rx)));
    }
    auto writer = ex.spawn(send_two(tx));
    ASSERT_TRUE(tx.send(3).is_sent());
    ASSERT_TRUE(tx.send(4).is_sent());
    writer.join();
    tx.close();
    int sum = 0;
    for (auto& r : readers) {
      sum += r.join();
    }
    // Two readers got 1 and 2 from the writer, two got 3 and 4 from here: every value once.
    EXPECT_EQ(sum, 1 + 2 + 3 + 4);
  }
  ASSERT_TRUE(eventually([&] { return dumps.load() > 0; }));
  stop.store(true);
  dumper.join();
  EXPECT_TRUE(spindle::snapshot(ex).listed_coroutines.empty());
}

TEST(DumpCoroutines, AStallReportListsTheCoroutines) {
  std::atomic<bool> reported{false};
  std::string report;
  std::mutex mu;
  {
    spindle::executor ex(
        spindle::executor_options().workers(1).stall_report(50ms, [&](std::string_view text) {
          std::lock_guard guard(mu);
          if (report.empty()) {
            report = std::string(text);
          }
          reported.store(true);
        }));
    auto [tx, rx] = spindle::bounded<int>(1);
    test_gate gate;
    opens_at_exit const opener{gate};
    // A coroutine waits on a channel while the only worker is stuck in a task: the report
    // lists the unnamed coroutine (a stall report lists them all) and its receive.
    auto h = ex.spawn(receive(rx));
    ASSERT_TRUE(eventually([&] {
      auto const d = spindle::snapshot(ex);
      return d.listed_coroutines.size() == 1 &&
             d.listed_coroutines[0].state == spindle::coroutine_state::suspended;
    }));
    auto stuck = ex.spawn([&] { gate.wait(); });
    ASSERT_TRUE(eventually([&] { return reported.load(); }));
    gate.open();
    stuck.join();
    ASSERT_TRUE(tx.send(1).is_sent());
    EXPECT_EQ(h.join(), 1);
  }
  std::lock_guard guard(mu);
  EXPECT_NE(report.find(": suspended, recv on 0x"), std::string::npos) << report;
}

}  // namespace
