// Tests for spindle::oneshot (oneshot.hpp): one value sent once and received once, the sender's
// drop closing the receiver's waits, the receiver's drop destroying a value it never received,
// every timed and stop_token form for threads and coroutines, the select case beside a channel
// case, exactly-once with a counting type under threads and coroutines mixed, and misuse.

#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/oneshot.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
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

TEST(Oneshot, Example) {
  // A request carries the sender of its reply; the requester waits on the receiver.
  auto [reply_tx, reply_rx] = spindle::oneshot<std::string>();
  std::thread worker([tx = std::move(reply_tx)]() mutable {
    auto r = tx.send("done");
    EXPECT_TRUE(r.is_sent());
  });
  std::optional<std::string> reply = reply_rx.recv();
  worker.join();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(*reply, "done");
  // The value was received: nothing more will come.
  EXPECT_TRUE(reply_rx.try_recv().is_closed());
}

TEST(Oneshot, TryRecvSeesEmptyThenTheValueThenClosed) {
  auto [tx, rx] = spindle::oneshot<int>();
  EXPECT_TRUE(rx.try_recv().is_empty());
  EXPECT_FALSE(tx.was_sent());
  EXPECT_TRUE(tx.send(7).is_sent());
  EXPECT_TRUE(tx.was_sent());
  auto r = rx.try_recv();
  ASSERT_TRUE(r.is_received());
  EXPECT_EQ(*r.value, 7);
  EXPECT_TRUE(rx.try_recv().is_closed());
  EXPECT_FALSE(rx.recv().has_value());
}

TEST(Oneshot, DroppingTheSenderWithoutSendingCloses) {
  auto [tx, rx] = spindle::oneshot<int>();
  std::thread t([sender = std::move(tx)]() mutable {
    auto gone = std::move(sender);  // destroyed at the end of the lambda, unsent
  });
  EXPECT_FALSE(rx.recv().has_value());
  t.join();
  EXPECT_TRUE(rx.recv_for(1h).is_closed());
}

TEST(Oneshot, ASecondSendIsALogicError) {
  auto [tx, rx] = spindle::oneshot<int>();
  EXPECT_TRUE(tx.send(1).is_sent());
  EXPECT_THROW(static_cast<void>(tx.send(2)), std::logic_error);
  EXPECT_EQ(rx.recv(), 1);
}

TEST(Oneshot, SendAfterTheReceiverLeftHandsTheValueBack) {
  {
    auto [tx, rx] = spindle::oneshot<std::unique_ptr<int>>();
    EXPECT_FALSE(tx.is_closed());
    { auto gone = std::move(rx); }
    EXPECT_TRUE(tx.is_closed());
    auto r = tx.send(std::make_unique<int>(5));
    ASSERT_TRUE(r.is_closed());
    ASSERT_TRUE(r.value.has_value());
    EXPECT_EQ(**r.value, 5);
    // Not a double send: nothing was sent, so trying again reports closed again.
    EXPECT_TRUE(tx.send(std::make_unique<int>(6)).is_closed());
  }
  {
    auto [tx, rx] = spindle::oneshot<int>();
    rx.close();
    EXPECT_TRUE(tx.is_closed());
    EXPECT_TRUE(tx.send(1).is_closed());
    EXPECT_TRUE(rx.try_recv().is_closed());
  }
}

TEST(Oneshot, CloseKeepsAValueSentBefore) {
  auto [tx, rx] = spindle::oneshot<int>();
  EXPECT_TRUE(tx.send(3).is_sent());
  rx.close();
  EXPECT_EQ(rx.recv(), 3);
}

TEST(Oneshot, AValueNeverReceivedIsDestroyedOnce) {
  auto const before = tracked::live();
  {
    auto [tx, rx] = spindle::oneshot<tracked>();
    EXPECT_TRUE(tx.send(tracked(1)).is_sent());
    EXPECT_EQ(tracked::live(), before + 1);
    { auto gone = std::move(rx); }
    EXPECT_EQ(tracked::live(), before);
  }
  {
    // The sender goes first, then the receiver: the value goes with the receiver.
    auto [tx, rx] = spindle::oneshot<tracked>();
    EXPECT_TRUE(tx.send(tracked(2)).is_sent());
    { auto gone = std::move(tx); }
    EXPECT_EQ(tracked::live(), before + 1);
  }
  EXPECT_EQ(tracked::live(), before);
}

TEST(Oneshot, TimedAndStopFormsOfAThread) {
  auto [tx, rx] = spindle::oneshot<int>();
  EXPECT_TRUE(rx.recv_for(1ms).is_timed_out());
  EXPECT_TRUE(rx.recv_until(std::chrono::system_clock::now() + 1ms).is_timed_out());
  EXPECT_TRUE(rx.recv_for(0ms).is_timed_out());
  std::stop_source source;
  source.request_stop();
  EXPECT_TRUE(rx.recv(source.get_token()).is_cancelled());
  EXPECT_TRUE(tx.send(9).is_sent());
  // A value that is there wins over a requested stop and an expired deadline.
  auto r = rx.recv(source.get_token());
  ASSERT_TRUE(r.is_received());
  EXPECT_EQ(*r.value, 9);
}

TEST(Oneshot, StopFromAnotherThreadEndsAWait) {
  auto [tx, rx] = spindle::oneshot<int>();
  std::stop_source source;
  std::thread t([&source] {
    std::this_thread::sleep_for(2ms);
    source.request_stop();
  });
  // Whenever the request comes (before or during the wait), the wait ends cancelled.
  EXPECT_TRUE(rx.recv(source.get_token()).is_cancelled());
  t.join();
  EXPECT_TRUE(tx.send(1).is_sent());
}

TEST(Oneshot, CoroutineReceivesFromAThread) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::oneshot<tracked>();
  auto h = ex.spawn([](spindle::oneshot_receiver<tracked> r) -> spindle::task<std::uint64_t> {
    auto v = co_await r.async_recv();
    co_return v ? v->id() : 0;
  }(std::move(rx)));
  std::thread t(
      [sender = std::move(tx)]() mutable { EXPECT_TRUE(sender.send(tracked(41)).is_sent()); });
  EXPECT_EQ(h.join(), 41U);
  t.join();
}

TEST(Oneshot, CoroutineTimedAndStopForms) {
  auto [tx, rx] = spindle::oneshot<int>();
  auto const score = spindle::sync_wait(
      [](spindle::oneshot_sender<int>& s, spindle::oneshot_receiver<int>& r) -> spindle::task<int> {
        int points = 0;
        auto a = co_await r.async_recv_for(1ms);
        points += a.is_timed_out() ? 1 : 0;
        auto const deadline = std::chrono::steady_clock::now() + 1ms;
        auto b = co_await r.async_recv_until(deadline);
        points += b.is_timed_out() ? 1 : 0;
        std::stop_source st;
        st.request_stop();
        auto c = co_await r.async_recv(st.get_token());
        points += c.is_cancelled() ? 1 : 0;
        points += s.send(5).is_sent() ? 1 : 0;
        auto d = co_await r.async_recv_for(1h);
        points += (d.is_received() && *d.value == 5) ? 1 : 0;
        auto e = co_await r.async_recv();
        points += e.has_value() ? 0 : 1;
        co_return points;
      }(tx, rx));
  EXPECT_EQ(score, 6);
}

TEST(Oneshot, CoroutineSeesTheSenderDropped) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::oneshot<int>();
  auto h = ex.spawn([](spindle::oneshot_receiver<int> r) -> spindle::task<bool> {
    auto v = co_await r.async_recv();
    co_return v.has_value();
  }(std::move(rx)));
  std::thread t([sender = std::move(tx)]() mutable { auto gone = std::move(sender); });
  EXPECT_FALSE(h.join());
  t.join();
}

TEST(Oneshot, SelectWithAChannelCaseBeside) {
  auto [tx, rx] = spindle::oneshot<int>();
  auto [ctx, crx] = spindle::bounded<int>(1);
  std::thread t([sender = std::move(tx)]() mutable { EXPECT_TRUE(sender.send(11).is_sent()); });
  std::optional<int> got;
  auto const i = spindle::select(spindle::on_recv(rx, [&](std::optional<int> v) { got = v; }),
                                 spindle::on_recv(crx, [](std::optional<int>) {}));
  t.join();
  EXPECT_EQ(i, 0U);
  EXPECT_EQ(got, 11);
  // The channel case was not chosen: its value would still be there.
  EXPECT_TRUE(ctx.send(1).is_sent());
  // The received oneshot is a ready case (closed); the biased select tries it first.
  EXPECT_EQ(spindle::select_biased(spindle::on_recv(rx, [](std::optional<int>) {}),
                                   spindle::on_recv(crx, [](std::optional<int>) {})),
            0U);
  EXPECT_EQ(crx.recv(), 1);
}

TEST(Oneshot, SelectTimesOutAndLeavesTheValue) {
  auto [tx, rx] = spindle::oneshot<int>();
  auto const i = spindle::select(spindle::on_recv(rx, [](std::optional<int>) {}),
                                 spindle::on_timeout(1ms, [] {}));
  EXPECT_EQ(i, 1U);
  EXPECT_TRUE(tx.send(4).is_sent());
  std::optional<int> got;
  auto const j = spindle::sync_wait(
      [](spindle::oneshot_receiver<int>& r, std::optional<int>& out) -> spindle::task<std::size_t> {
        co_return co_await spindle::async_select(
            spindle::on_recv(r, [&out](std::optional<int> v) { out = v; }),
            spindle::on_timeout(1h, [] {}));
      }(rx, got));
  EXPECT_EQ(j, 0U);
  EXPECT_EQ(got, 4);
}

TEST(Oneshot, ManyPairsExactlyOnceUnderThreadsAndCoroutines) {
  auto const before = tracked::live();
  {
    spindle::executor ex(2);
    constexpr int pairs = 200;
    std::vector<spindle::oneshot_sender<tracked>> senders;
    std::vector<spindle::join_handle<int>> handles;
    std::atomic<int> received{0};
    for (int i = 0; i < pairs; ++i) {
      auto [tx, rx] = spindle::oneshot<tracked>();
      senders.push_back(std::move(tx));
      // A third of the receivers give up at once, a third wait, a third leave without looking.
      handles.push_back(ex.spawn([](spindle::oneshot_receiver<tracked> r, int kind,
                                    std::atomic<int>& n) -> spindle::task<int> {
        if (kind == 0) {
          auto v = co_await r.async_recv();
          n.fetch_add(v ? 1 : 0);
        } else if (kind == 1) {
          auto v = co_await r.async_recv_for(0ms);
          n.fetch_add(v.is_received() ? 1 : 0);
        }
        co_return 0;
      }(std::move(rx), i % 3, received)));
    }
    std::thread a([&] {
      for (int i = 0; i < pairs; i += 2) {
        static_cast<void>(senders[static_cast<std::size_t>(i)].send(tracked(1)));
      }
    });
    std::thread b([&] {
      for (int i = 1; i < pairs; i += 2) {
        if (i % 4 == 1) {
          static_cast<void>(senders[static_cast<std::size_t>(i)].send(tracked(2)));
        } else {
          auto gone = std::move(senders[static_cast<std::size_t>(i)]);
        }
      }
    });
    a.join();
    b.join();
    senders.clear();
    for (auto& h : handles) {
      EXPECT_EQ(h.join(), 0);
    }
    EXPECT_GT(received.load(), 0);
  }
  EXPECT_EQ(tracked::live(), before);
}

TEST(Oneshot, SenderWaitsForTheReceiverToLeave) {
  auto [tx, rx] = spindle::oneshot<int>();
  EXPECT_FALSE(tx.wait_closed_for(1ms));
  std::stop_source source;
  source.request_stop();
  EXPECT_FALSE(tx.wait_closed(source.get_token()));
  EXPECT_EQ(spindle::select(spindle::on_closed(tx, [] {}), spindle::on_timeout(1ms, [] {})), 1U);
  std::thread t([r = std::move(rx)]() mutable { auto gone = std::move(r); });
  tx.wait_closed();  // whether the receiver left before or during the wait
  t.join();
  EXPECT_TRUE(tx.is_closed());
  EXPECT_TRUE(tx.wait_closed_for(1h));
  bool chosen = false;
  EXPECT_EQ(spindle::select(spindle::on_closed(tx, [&chosen] { chosen = true; }),
                            spindle::on_timeout(1h, [] {})),
            0U);
  EXPECT_TRUE(chosen);
}

TEST(Oneshot, CoroutineSenderSeesTheReceiverClose) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::oneshot<int>();
  auto h = ex.spawn([](spindle::oneshot_sender<int> s) -> spindle::task<bool> {
    co_await s.async_closed();
    auto r = s.send(1);
    co_return r.is_closed();
  }(std::move(tx)));
  std::thread t([r = std::move(rx)]() mutable { r.close(); });
  EXPECT_TRUE(h.join());
  t.join();
}

TEST(OneshotDeathTest, AMovedFromHandleIsReported) {
  auto [tx, rx] = spindle::oneshot<int>();
  auto moved = std::move(rx);
  EXPECT_DEATH(static_cast<void>(rx.try_recv()), "moved-from spindle::oneshot_receiver");
  auto moved_tx = std::move(tx);
  EXPECT_DEATH(static_cast<void>(tx.is_closed()), "moved-from spindle::oneshot_sender");
}

}  // namespace
