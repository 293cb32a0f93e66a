// Tests for spindle::watch (watch.hpp): the latest value and its version, receivers that skip
// intermediate versions but never miss the latest, borrow guards, closing when the sender goes,
// every timed and stop_token form for threads and coroutines, the select case beside a channel
// case, exactly-once destruction of the values with a counting type, and misuse.

#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>
#include <spindle/watch.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/tracked.hpp"

namespace {

using namespace std::chrono_literals;
using spindle_test::tracked;

struct config {
  int generation = 0;
  std::string name;
};

TEST(Watch, Example) {
  auto [tx, rx] = spindle::watch(config{0, "initial"});
  std::thread reader([r = rx]() mutable {
    // Waits for each version newer than the last one it saw, until the sender is gone; it may
    // skip versions, but the last one it reads is the last one sent.
    int last = 0;
    while (r.changed()) {
      last = r.borrow()->generation;
    }
    EXPECT_EQ(last, 3);
  });
  for (int g = 1; g <= 3; ++g) {
    tx.send_modify([g](config& c) {
      c.generation = g;
      c.name = "generation " + std::to_string(g);
    });
  }
  { auto gone = std::move(tx); }
  reader.join();
  EXPECT_EQ(rx.borrow()->name, "generation 3");
}

TEST(Watch, VersionsAndBorrow) {
  auto [tx, rx] = spindle::watch(1);
  EXPECT_FALSE(rx.has_changed());
  EXPECT_EQ(*rx.borrow(), 1);
  EXPECT_FALSE(rx.borrow().has_changed());
  EXPECT_TRUE(tx.send(2).is_sent());
  EXPECT_TRUE(rx.has_changed());
  EXPECT_TRUE(rx.borrow().has_changed());  // borrow() does not mark it seen
  EXPECT_TRUE(rx.has_changed());
  {
    auto r = rx.borrow_and_update();
    EXPECT_TRUE(r.has_changed());
    EXPECT_EQ(*r, 2);
  }
  EXPECT_FALSE(rx.has_changed());
  EXPECT_TRUE(rx.changed_for(0ms).is_timed_out());
  EXPECT_EQ(tx.send_replace(3), 2);
  EXPECT_TRUE(rx.changed().is_changed());
  EXPECT_FALSE(rx.has_changed());
  EXPECT_EQ(*tx.borrow(), 3);
}

TEST(Watch, SendIfModifiedWakesOnlyWhenItSaysSo) {
  auto [tx, rx] = spindle::watch(10);
  EXPECT_FALSE(tx.send_if_modified([](int&) { return false; }));
  EXPECT_FALSE(rx.has_changed());
  EXPECT_TRUE(tx.send_if_modified([](int& v) {
    ++v;
    return true;
  }));
  EXPECT_TRUE(rx.changed().is_changed());
  EXPECT_EQ(*rx.borrow(), 11);
}

TEST(Watch, ReceiversSkipIntermediateVersionsButSeeTheLatest) {
  auto [tx, rx] = spindle::watch(0);
  for (int i = 1; i <= 5; ++i) {
    EXPECT_TRUE(tx.send(i).is_sent());
  }
  EXPECT_TRUE(rx.changed().is_changed());
  EXPECT_EQ(*rx.borrow(), 5);
  EXPECT_TRUE(rx.changed_for(0ms).is_timed_out());
}

TEST(Watch, CopiesAndSubscribersKeepTheirOwnVersion) {
  auto [tx, rx] = spindle::watch(0);
  EXPECT_TRUE(tx.send(1).is_sent());
  auto copy = rx;  // has not seen version 1 either
  auto fresh = tx.subscribe();
  EXPECT_EQ(tx.receiver_count(), 3U);
  EXPECT_TRUE(rx.changed().is_changed());
  EXPECT_TRUE(copy.has_changed());
  EXPECT_FALSE(fresh.has_changed());
}

TEST(Watch, ClosedOnceTheSenderIsGoneAndEverythingSeen) {
  auto [tx, rx] = spindle::watch(0);
  EXPECT_TRUE(tx.send(1).is_sent());
  { auto gone = std::move(tx); }
  EXPECT_TRUE(rx.is_closed());
  EXPECT_TRUE(rx.changed().is_changed());  // version 1 was not seen yet
  EXPECT_TRUE(rx.changed().is_closed());
  EXPECT_TRUE(rx.changed_for(1h).is_closed());
  EXPECT_EQ(*rx.borrow(), 1);  // the value stays readable
}

TEST(Watch, SendWithNoReceiverHandsTheValueBack) {
  auto [tx, rx] = spindle::watch(std::string("a"));
  { auto gone = std::move(rx); }
  EXPECT_TRUE(tx.is_closed());
  auto r = tx.send("b");
  ASSERT_TRUE(r.is_closed());
  EXPECT_EQ(*r.value, "b");
  EXPECT_EQ(*tx.borrow(), "a");
  EXPECT_EQ(tx.send_replace("c"), "a");  // always stores
  auto again = tx.subscribe();
  EXPECT_FALSE(tx.is_closed());
  EXPECT_EQ(*again.borrow(), "c");
}

TEST(Watch, TimedAndStopFormsOfAThread) {
  auto [tx, rx] = spindle::watch(0);
  EXPECT_TRUE(rx.changed_for(1ms).is_timed_out());
  EXPECT_TRUE(rx.changed_until(std::chrono::system_clock::now() + 1ms).is_timed_out());
  std::stop_source source;
  source.request_stop();
  EXPECT_TRUE(rx.changed(source.get_token()).is_cancelled());
  EXPECT_TRUE(tx.send(1).is_sent());
  // A new version wins over a requested stop.
  EXPECT_TRUE(rx.changed(source.get_token()).is_changed());
}

TEST(Watch, ThreadWaitsForASendFromAnother) {
  auto [tx, rx] = spindle::watch(0);
  std::thread t([s = std::move(tx)]() mutable { EXPECT_TRUE(s.send(42).is_sent()); });
  EXPECT_TRUE(rx.changed().is_changed());
  EXPECT_EQ(*rx.borrow(), 42);
  t.join();
  EXPECT_TRUE(rx.changed().is_closed());
}

TEST(Watch, CoroutinesWatchBesideThreads) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::watch(0);
  std::vector<spindle::join_handle<int>> handles;
  for (int i = 0; i < 4; ++i) {
    handles.push_back(ex.spawn([](spindle::watch_receiver<int> r) -> spindle::task<int> {
      int last = -1;
      for (;;) {
        auto c = co_await r.async_changed();
        if (!c) {
          break;
        }
        last = *r.borrow();
      }
      co_return last;
    }(rx)));
  }
  std::thread reader([r = rx]() mutable {
    int last = -1;
    while (r.changed()) {
      last = *r.borrow();
    }
    EXPECT_EQ(last, 100);
  });
  for (int i = 1; i <= 100; ++i) {
    EXPECT_TRUE(tx.send(i).is_sent());
  }
  { auto gone = std::move(tx); }
  for (auto& h : handles) {
    EXPECT_EQ(h.join(), 100);
  }
  reader.join();
}

TEST(Watch, CoroutineTimedAndStopForms) {
  auto [tx, rx] = spindle::watch(0);
  auto const score = spindle::sync_wait(
      [](spindle::watch_sender<int>& s, spindle::watch_receiver<int>& r) -> spindle::task<int> {
        int points = 0;
        auto a = co_await r.async_changed_for(1ms);
        points += a.is_timed_out() ? 1 : 0;
        auto const deadline = std::chrono::steady_clock::now() + 1ms;
        auto b = co_await r.async_changed_until(deadline);
        points += b.is_timed_out() ? 1 : 0;
        std::stop_source st;
        st.request_stop();
        auto c = co_await r.async_changed(st.get_token());
        points += c.is_cancelled() ? 1 : 0;
        points += s.send(5).is_sent() ? 1 : 0;
        auto d = co_await r.async_changed_for(1h);
        points += d.is_changed() ? 1 : 0;
        points += *r.borrow() == 5 ? 1 : 0;
        co_return points;
      }(tx, rx));
  EXPECT_EQ(score, 6);
}

TEST(Watch, SelectWithAChannelCaseBeside) {
  auto [tx, rx] = spindle::watch(0);
  auto [ctx, crx] = spindle::bounded<int>(1);
  std::thread t([s = std::move(tx)]() mutable { EXPECT_TRUE(s.send(7).is_sent()); });
  bool changed = false;
  auto const i = spindle::select(spindle::on_changed(rx, [&](bool c) { changed = c; }),
                                 spindle::on_recv(crx, [](std::optional<int>) {}));
  EXPECT_EQ(i, 0U);
  EXPECT_TRUE(changed);
  EXPECT_EQ(*rx.borrow(), 7);
  t.join();
  // Nothing unseen: the channel case wins once it has a value.
  EXPECT_TRUE(ctx.send(1).is_sent());
  std::optional<int> got;
  auto const j =
      spindle::select_biased(spindle::on_recv(crx, [&](std::optional<int> v) { got = v; }),
                             spindle::on_changed(rx, [](bool) {}));
  EXPECT_EQ(j, 0U);
  EXPECT_EQ(got, 1);
  // The sender is gone and version 1 was seen: the watch case reports closed.
  bool closed_seen = false;
  EXPECT_EQ(spindle::select(spindle::on_changed(rx, [&](bool c) { closed_seen = !c; }),
                            spindle::on_timeout(1h, [] {})),
            0U);
  EXPECT_TRUE(closed_seen);
}

TEST(Watch, EveryValueIsDestroyedOnce) {
  auto const before = tracked::live();
  {
    auto [tx, rx] = spindle::watch(tracked(0));
    for (std::uint64_t i = 1; i <= 10; ++i) {
      if (i % 2 == 0) {
        EXPECT_TRUE(tx.send(tracked(i)).is_sent());
      } else {
        auto old = tx.send_replace(tracked(i));
        EXPECT_EQ(old.id(), i - 1);
      }
    }
    EXPECT_EQ(tracked::live(), before + 1);
    { auto gone = std::move(rx); }
    auto back = tx.send(tracked(99));
    EXPECT_TRUE(back.is_closed());
    EXPECT_EQ(tx.borrow()->id(), 10U);
  }
  EXPECT_EQ(tracked::live(), before);
}

TEST(WatchDeathTest, MisuseIsReported) {
  auto [tx, rx] = spindle::watch(0);
  EXPECT_DEATH(
      {
        auto guard = rx.borrow();
        static_cast<void>(tx.send(1));
      },
      "borrow\\(\\) guard on this thread");
  auto moved = std::move(rx);
  EXPECT_DEATH(static_cast<void>(rx.has_changed()), "moved-from spindle::watch_receiver");
}

}  // namespace
