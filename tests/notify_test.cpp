// Tests for spindle::notify (notify.hpp): notify_one stores one permit when nobody waits,
// permits do not add up, notify_all wakes only the current waiters, waiters in order, every timed
// and stop_token form for threads and coroutines, and the select case.

#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/notify.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <stop_token>
#include <thread>
#include <vector>

#include "support/eventually.hpp"

namespace {

using namespace std::chrono_literals;

TEST(Notify, ANotificationBeforeTheWaitIsKept) {
  spindle::notify n;
  n.notify_one();
  n.notify_one();  // does not add up
  EXPECT_TRUE(n.wait_for(0ms));
  EXPECT_FALSE(n.wait_for(2ms));
}

TEST(Notify, NotifyOneWakesAWaitingThread) {
  spindle::notify n;
  std::atomic<bool> woke{false};
  std::thread t([&] {
    n.wait();
    woke = true;
  });
  std::this_thread::sleep_for(5ms);
  EXPECT_FALSE(woke.load());
  n.notify_one();
  t.join();
  EXPECT_TRUE(woke.load());
  // The wake consumed the notification.
  EXPECT_FALSE(n.wait_for(1ms));
}

TEST(Notify, NotifyAllWakesTheCurrentWaitersAndStoresNothing) {
  spindle::notify n;
  std::atomic<int> woke{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      n.wait();
      ++woke;
    });
  }
  // notify_all wakes those in line: wait until all three are.
  ASSERT_TRUE(spindle_test::eventually([&] { return n.waiting() == 3; }));
  n.notify_all();
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(woke.load(), 3);
  EXPECT_FALSE(n.wait_for(1ms));
  n.notify_all();  // nobody waits: nothing happens
  EXPECT_FALSE(n.wait_for(1ms));
}

TEST(Notify, StopAndDeadlinesEndAWait) {
  spindle::notify n;
  std::stop_source source;
  source.request_stop();
  EXPECT_FALSE(n.wait(source.get_token()));
  EXPECT_FALSE(n.wait_until(std::chrono::system_clock::now() + 1ms));
  n.notify_one();
  // A stored notification wins over a stop already requested.
  EXPECT_TRUE(n.wait(source.get_token()));
}

TEST(Notify, CoroutinesWaitAndWakeInOrder) {
  spindle::executor ex(2);
  spindle::notify n;
  std::atomic<int> woke{0};
  std::vector<spindle::join_handle<void>> handles;
  for (int i = 0; i < 8; ++i) {
    handles.push_back(ex.spawn([](spindle::notify& no, std::atomic<int>& w) -> spindle::task<> {
      co_await no.async_wait();
      w.fetch_add(1);
    }(n, woke)));
  }
  // Permits with nobody waiting do not add up: notify once every coroutine is in line.
  ASSERT_TRUE(spindle_test::eventually([&] { return n.waiting() == 8; }));
  for (int i = 0; i < 8; ++i) {
    n.notify_one();
  }
  for (auto& h : handles) {
    h.join();
  }
  EXPECT_EQ(woke.load(), 8);
  auto const score = spindle::sync_wait([](spindle::notify& no) -> spindle::task<int> {
    int s = 0;
    s += (co_await no.async_wait_for(2ms)) ? 0 : 1;
    s += (co_await no.async_wait_until(std::chrono::steady_clock::now() + 1ms)) ? 0 : 1;
    std::stop_source st;
    st.request_stop();
    s += (co_await no.async_wait(st.get_token())) ? 0 : 1;
    no.notify_one();
    s += (co_await no.async_wait_for(1h)) ? 1 : 0;
    co_return s;
  }(n));
  EXPECT_EQ(score, 4);
}

TEST(Notify, SelectCase) {
  spindle::notify n;
  auto [tx, rx] = spindle::bounded<int>(1);
  std::thread t([&] {
    std::this_thread::sleep_for(5ms);
    n.notify_one();
  });
  bool notified = false;
  EXPECT_EQ(spindle::select(spindle::on_notified(n, [&] { notified = true; }),
                            spindle::on_recv(rx, [](std::optional<int>) {})),
            0U);
  t.join();
  EXPECT_TRUE(notified);
  EXPECT_FALSE(n.wait_for(1ms));
}

}  // namespace
