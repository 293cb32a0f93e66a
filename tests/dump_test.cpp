// Tests for spindle::dump (spindle/dump.hpp), task names, the stall watchdog
// (executor_options::stall_report) and tracing (executor_options::trace).
//
// Each hang is made on purpose: a task blocks on a latch the test holds, the test takes the dump
// from its own thread while the program is stuck, checks that the dump shows the cause (which
// worker runs which named task, who waits in a join, in which isolation region, how deep the
// deques are), then opens the latch and shuts down cleanly. A dump's fields are published by the
// workers as they go, so the tests wait (eventually) until the dump shows the expected state,
// never for a fixed time.

#include <spindle/dump.hpp>
#include <spindle/executor.hpp>
#include <spindle/isolate.hpp>

#include "support/eventually.hpp"
#include "support/test_gate.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using spindle_test::eventually;

/// The first worker whose outermost task is named `name`, or nullptr.
auto worker_with_outer(spindle::executor_dump const& d, std::string const& name)
    -> spindle::worker_dump const* {
  for (auto const& w : d.workers) {
    if (!w.stack.empty() && w.stack.front().name == name) {
      return &w;
    }
  }
  return nullptr;
}

/// The first worker whose innermost task is named `name`, or nullptr.
auto worker_running(spindle::executor_dump const& d, std::string const& name)
    -> spindle::worker_dump const* {
  for (auto const& w : d.workers) {
    if (!w.stack.empty() && w.stack.back().name == name &&
        w.state == spindle::worker_state::running) {
      return &w;
    }
  }
  return nullptr;
}

using spindle_test::opens_at_exit;
using spindle_test::test_gate;

auto is_waiting(spindle::worker_state s) -> bool {
  return s == spindle::worker_state::waiting || s == spindle::worker_state::waiting_asleep;
}

/// The dump shows "outer" waiting in a join (or running "inner" on top of it while it waits)
/// and "inner" running.
auto shows_join_on_inner(spindle::executor_dump const& d) -> bool {
  auto const* outer = worker_with_outer(d, "outer");
  auto const* inner = worker_running(d, "inner");
  if (outer == nullptr || inner == nullptr) {
    return false;
  }
  if (outer == inner) {
    // The waiting worker took "inner" itself: nested on top of "outer".
    return outer->stack.size() == 2;
  }
  return outer->stack.size() == 1 && is_waiting(outer->state);
}

TEST(Dump, Example) {
  test_gate gate;
  spindle::executor ex(2);
  opens_at_exit const opener{gate};
  std::atomic<bool> inner_started{false};
  // A task that joins another task, which waits for a latch this test holds: a hang of the
  // kind "a join on a task that waits for something nobody will give it".
  auto outer = ex.spawn(
      [&] {
        auto inner = ex.spawn(
            [&] {
              inner_started.store(true);
              gate.wait();
              return 1;
            },
            spindle::name("inner"));
        return inner.join() + 1;
      },
      spindle::name("outer"));

  ASSERT_TRUE(eventually([&] { return inner_started.load(); }));
  ASSERT_TRUE(eventually([&] { return shows_join_on_inner(spindle::snapshot(ex)); }));

  std::string const text = spindle::dump(ex);
  EXPECT_NE(text.find("\"outer\" #"), std::string::npos) << text;
  EXPECT_NE(text.find("\"inner\" #"), std::string::npos) << text;
  EXPECT_NE(text.find("running"), std::string::npos) << text;
  std::string const json = spindle::dump(ex, spindle::dump_format::json);
  EXPECT_NE(json.find("\"name\":\"outer\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"name\":\"inner\""), std::string::npos) << json;

  gate.open();
  EXPECT_EQ(outer.join(), 2);
  ex.shutdown();
}

TEST(Dump, NamedTasksGetDistinctIds) {
  test_gate gate;
  test_gate gate2;
  spindle::executor ex(1);
  opens_at_exit const opener{gate};
  opens_at_exit const opener2{gate2};
  std::atomic<int> started{0};
  auto a = ex.spawn(
      [&] {
        started.fetch_add(1);
        gate.wait();
      },
      spindle::name("same"));
  ASSERT_TRUE(eventually([&] { return started.load() == 1; }));
  spindle::executor_dump const d = spindle::snapshot(ex);
  auto const* w = worker_with_outer(d, "same");
  ASSERT_NE(w, nullptr) << spindle::to_text(d);
  std::uint64_t const first_id = w->stack.front().id;
  EXPECT_NE(first_id, 0U);
  gate.open();
  a.join();

  auto b = ex.spawn(
      [&] {
        started.fetch_add(1);
        gate2.wait();
      },
      spindle::name("same"));
  ASSERT_TRUE(eventually([&] { return started.load() == 2; }));
  spindle::executor_dump const d2 = spindle::snapshot(ex);
  auto const* w2 = worker_with_outer(d2, "same");
  ASSERT_NE(w2, nullptr) << spindle::to_text(d2);
  EXPECT_NE(w2->stack.front().id, first_id);
  gate2.open();
  b.join();
}

TEST(Dump, NamesATaskThatTakesTheShutdownToken) {
  test_gate gate;
  spindle::executor ex(1);
  opens_at_exit const opener{gate};
  std::atomic<bool> started{false};
  auto h = ex.spawn(
      [&](std::stop_token const& token) {
        started.store(true);
        gate.wait();
        return token.stop_requested();
      },
      spindle::name("stoppable"));
  ASSERT_TRUE(eventually([&] { return started.load(); }));
  auto const d = spindle::snapshot(ex);
  EXPECT_NE(worker_running(d, "stoppable"), nullptr) << spindle::to_text(d);
  gate.open();
  EXPECT_FALSE(h.join());
}

TEST(Dump, UnnamedTaskShowsAsUnnamed) {
  test_gate gate;
  spindle::executor ex(1);
  opens_at_exit const opener{gate};
  std::atomic<bool> started{false};
  auto h = ex.spawn([&] {
    started.store(true);
    gate.wait();
  });
  ASSERT_TRUE(eventually([&] { return started.load(); }));
  ASSERT_TRUE(eventually([&] {
    auto const d = spindle::snapshot(ex);
    return d.workers.size() == 1 && d.workers[0].state == spindle::worker_state::running;
  }));
  auto const d = spindle::snapshot(ex);
  ASSERT_EQ(d.workers[0].stack.size(), 1U);
  EXPECT_EQ(d.workers[0].stack[0].id, 0U);
  EXPECT_TRUE(d.workers[0].stack[0].name.empty());
  EXPECT_NE(spindle::to_text(d).find("(unnamed)"), std::string::npos);
  EXPECT_NE(spindle::to_json(d).find("{\"name\":null,\"id\":0,\"waits_for\":{\"kind\":\"none\""),
            std::string::npos);
  gate.open();
  h.join();
}

TEST(Dump, ParkedWorkersWithNothingQueued) {
  spindle::executor ex(2);
  ASSERT_TRUE(eventually([&] {
    auto const d = spindle::snapshot(ex);
    for (auto const& w : d.workers) {
      if (w.state != spindle::worker_state::parked) {
        return false;
      }
    }
    return d.workers.size() == 2;
  }));
  auto const d = spindle::snapshot(ex);
  EXPECT_EQ(d.worker_count, 2U);
  EXPECT_EQ(d.injector_depth, 0U);
  EXPECT_FALSE(d.stopping);
  for (auto const& w : d.workers) {
    EXPECT_FALSE(w.guest);
    EXPECT_TRUE(w.stack.empty());
    EXPECT_EQ(w.deque_depth, 0U);
    EXPECT_EQ(w.isolation_region, 0U);
  }
  std::string const json = spindle::dump(ex, spindle::dump_format::json);
  EXPECT_NE(json.find("\"state\":\"parked\""), std::string::npos) << json;
}

TEST(Dump, ShowsTheDepthOfABlockedWorkersDeque) {
  test_gate gate;
  spindle::executor ex(1);
  opens_at_exit const opener{gate};
  std::atomic<bool> blocked{false};
  auto h = ex.spawn(
      [&] {
        for (int i = 0; i < 3; ++i) {
          ex.post([] {});
        }
        blocked.store(true);
        // A wait the library does not see: the three tasks stay in this worker's deque.
        gate.wait();
      },
      spindle::name("blocker"));
  ASSERT_TRUE(eventually([&] { return blocked.load(); }));
  auto const d = spindle::snapshot(ex);
  auto const* w = worker_running(d, "blocker");
  ASSERT_NE(w, nullptr) << spindle::to_text(d);
  EXPECT_EQ(w->deque_depth, 3U) << spindle::to_text(d);
  gate.open();
  h.join();
}

TEST(Dump, ShowsTheIsolationRegionOfAWait) {
  test_gate gate;
  spindle::executor ex(2);
  opens_at_exit const opener{gate};
  std::atomic<bool> inner_started{false};
  // A task holding a region (a lock across a join, say) waits for a task of its region that
  // waits for the latch.
  auto outer = ex.spawn(
      [&] {
        return spindle::isolate(ex, [&] {
          auto inner = ex.spawn(
              [&] {
                inner_started.store(true);
                gate.wait();
                return 1;
              },
              spindle::name("inner"));
          return inner.join();
        });
      },
      spindle::name("outer"));
  ASSERT_TRUE(eventually([&] { return inner_started.load(); }));
  ASSERT_TRUE(eventually([&] {
    auto const d = spindle::snapshot(ex);
    auto const* w = worker_with_outer(d, "outer");
    return shows_join_on_inner(d) && w != nullptr && w->isolation_region != 0;
  }));
  std::string const text = spindle::dump(ex);
  EXPECT_NE(text.find(", isolation region "), std::string::npos) << text;
  gate.open();
  EXPECT_EQ(outer.join(), 1);
}

TEST(Dump, ShowsAGuestSlotInsideAJoinFromOutside) {
  test_gate gate;
  spindle::executor ex(1);
  std::atomic<bool> started{false};
  std::jthread outside([&] {
    // Not a worker: the join takes a guest slot and runs `a` there.
    spindle::join(
        ex,
        [&] {
          started.store(true);
          gate.wait();
        },
        [] {});
  });
  opens_at_exit const opener{gate};
  ASSERT_TRUE(eventually([&] { return started.load(); }));
  auto const d = spindle::snapshot(ex);
  bool guest_running = false;
  for (auto const& w : d.workers) {
    guest_running = guest_running || (w.guest && w.state == spindle::worker_state::running);
  }
  EXPECT_TRUE(guest_running) << spindle::to_text(d);
  EXPECT_NE(spindle::to_text(d).find("guest"), std::string::npos);
  gate.open();
  outside.join();
}

TEST(Dump, DumpAllListsEveryLiveExecutor) {
  spindle::executor a(1);
  spindle::executor b(1);
  auto const ida = spindle::snapshot(a).id;
  auto const idb = spindle::snapshot(b).id;
  EXPECT_NE(ida, idb);
  std::string const text = spindle::dump_all();
  EXPECT_NE(text.find("spindle executor " + std::to_string(ida) + ":"), std::string::npos);
  EXPECT_NE(text.find("spindle executor " + std::to_string(idb) + ":"), std::string::npos);
  std::string const json = spindle::dump_all(spindle::dump_format::json);
  EXPECT_EQ(json.front(), '[');
  EXPECT_EQ(json.back(), ']');
  EXPECT_NE(json.find("\"executor\":" + std::to_string(ida)), std::string::npos);
}

TEST(Dump, DumpAllForgetsADestroyedExecutor) {
  std::uint64_t id = 0;
  {
    spindle::executor ex(1);
    id = spindle::snapshot(ex).id;
  }
  EXPECT_EQ(spindle::dump_all().find("spindle executor " + std::to_string(id) + ":"),
            std::string::npos);
}

TEST(Dump, JsonEscapesNames) {
  spindle::executor_dump d;
  d.workers.push_back({});
  d.workers[0].stack.push_back({"a\"b\\c", 7, {}, 0});
  EXPECT_NE(spindle::to_json(d).find(R"("name":"a\"b\\c","id":7)"), std::string::npos);
}

/// A sink that keeps the reports.
struct captured_reports {
  std::mutex mu;
  std::vector<std::string> texts;

  auto count() -> std::size_t {
    std::lock_guard guard(mu);
    return texts.size();
  }
};

TEST(StallReport, ReportsAStallOnceThroughTheSink) {
  captured_reports reports;
  test_gate gate;
  {
    spindle::executor ex(spindle::executor_options().workers(1).stall_report(
        std::chrono::milliseconds(20), [&](std::string_view text) {
          std::lock_guard guard(reports.mu);
          reports.texts.emplace_back(text);
        }));
    opens_at_exit const opener{gate};
    auto h = ex.spawn([&] { gate.wait(); }, spindle::name("stuck"));
    ASSERT_TRUE(eventually([&] { return reports.count() >= 1; }));
    // One report per stall: the stall goes on, and no second report comes while it does.
    // A wait for something that must not happen can only be bounded: 10 more periods.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(reports.count(), 1U);
    gate.open();
    h.join();
  }
  std::lock_guard guard(reports.mu);
  ASSERT_EQ(reports.texts.size(), 1U);
  EXPECT_NE(reports.texts[0].find("no task started for"), std::string::npos) << reports.texts[0];
  EXPECT_NE(reports.texts[0].find("\"stuck\" #"), std::string::npos) << reports.texts[0];
}

TEST(StallReport, AnIdleExecutorIsNotAStall) {
  captured_reports reports;
  {
    // `after` is long next to a scheduling delay: the worker is still inside the task for a
    // moment after the join returns, and a stall is work pending for all of `after`.
    spindle::executor ex(spindle::executor_options().workers(1).stall_report(
        std::chrono::milliseconds(100), [&](std::string_view text) {
          std::lock_guard guard(reports.mu);
          reports.texts.emplace_back(text);
        }));
    ex.spawn([] {}).join();
    // Bounded wait for something that must not happen, as above: 4 periods of `after`.
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  }
  EXPECT_EQ(reports.count(), 0U);
}

/// Counts of trace events by kind.
struct trace_counts {
  std::atomic<std::size_t> by_kind[6]{};

  static void record(void* self, spindle::trace_event const& e) noexcept {
    static_cast<trace_counts*>(self)->by_kind[static_cast<std::size_t>(e.kind)].fetch_add(1);
  }
  auto operator[](spindle::trace_kind k) const -> std::size_t {
    return by_kind[static_cast<std::size_t>(k)].load();
  }
};

TEST(Trace, CountsMatchTheTasksRun) {
  trace_counts counts;
  constexpr std::size_t outside = 200;
  constexpr std::size_t inside = 50;
  {
    spindle::executor ex(
        spindle::executor_options().workers(2).trace(&trace_counts::record, &counts));
    std::vector<spindle::join_handle<void>> handles;
    for (std::size_t i = 0; i < outside; ++i) {
      handles.push_back(ex.spawn([] {}));
    }
    ex.spawn([&] {
        for (std::size_t i = 0; i < inside; ++i) {
          ex.post([] {});
        }
      }).join();
    for (auto& h : handles) {
      h.join();
    }
    // After shutdown every event has been reported: the workers have exited.
    ex.shutdown();
  }
  std::size_t const tasks = outside + inside + 1;
  EXPECT_EQ(counts[spindle::trace_kind::spawned], tasks);
  EXPECT_EQ(counts[spindle::trace_kind::started], tasks);
  EXPECT_EQ(counts[spindle::trace_kind::finished], tasks);
  EXPECT_LE(counts[spindle::trace_kind::stolen], tasks);
  EXPECT_EQ(counts[spindle::trace_kind::parked], counts[spindle::trace_kind::woken]);
}

}  // namespace
