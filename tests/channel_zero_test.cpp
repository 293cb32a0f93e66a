// spindle::bounded<T>(0): the rendezvous flavour, where a send completes only when a receiver
// takes the value from the sender's hands. Handles and common semantics are in
// channel_test.cpp.

#include <spindle/channel.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <latch>
#include <memory>
#include <thread>

#include "support/channel_cases.hpp"
#include "support/tracked.hpp"

namespace {

using namespace std::chrono_literals;
using spindle::recv_status;
using spindle::send_status;
using spindle_test::tracked;

// A rendezvous channel buffers nothing: each send waits for a receiver and hands the value
// over directly, so when send returns, the receiver has the value. It is a handshake.
TEST(ZeroChannel, Example) {
  auto [tx, rx] = spindle::bounded<int>(0);
  EXPECT_EQ(tx.capacity(), 0U);

  std::jthread worker([rx = rx]() mutable {
    for (int request : rx) {  // each receive releases exactly one blocked send
      EXPECT_GE(request, 1);
    }
  });
  for (int i = 1; i <= 10; ++i) {
    auto r = tx.send(i);  // returns once the worker has taken i
    ASSERT_TRUE(r);
  }
  tx.close();

  // With nobody receiving, a non-blocking send cannot hand the value over: full.
  auto [tx2, rx2] = spindle::bounded<int>(0);
  auto r = tx2.try_send(1);
  EXPECT_EQ(r.status, send_status::full);
  EXPECT_EQ(*r.value, 1);
}

TEST(ZeroChannel, TryOperationsNeedAWaitingPartner) {
  auto [tx, rx] = spindle::bounded<int>(0);
  EXPECT_EQ(rx.try_recv().status, recv_status::empty);
  EXPECT_EQ(tx.try_send(1).status, send_status::full);
  EXPECT_EQ(tx.size(), 0U);
  tx.close();
  EXPECT_EQ(tx.try_send(1).status, send_status::closed);
  EXPECT_EQ(rx.try_recv().status, recv_status::closed);
}

TEST(ZeroChannel, TrySendHandsOffToABlockedReceiver) {
  auto [tx, rx] = spindle::bounded<std::unique_ptr<int>>(0);
  std::thread t([rx = rx]() mutable { EXPECT_EQ(**rx.recv(), 5); });
  // Succeeds only once the receiver has registered: proof of a direct hand-off.
  auto value = std::make_unique<int>(5);
  for (;;) {
    auto r = tx.try_send(std::move(value));
    if (r) {
      break;
    }
    ASSERT_EQ(r.status, send_status::full);
    value = std::move(*r.value);
    std::this_thread::yield();
  }
  t.join();
}

TEST(ZeroChannel, TryRecvTakesFromABlockedSender) {
  auto [tx, rx] = spindle::bounded<int>(0);
  std::atomic<bool> returned{false};
  std::thread t([&, tx = tx]() mutable {
    EXPECT_TRUE(tx.send(8));
    returned.store(true);
  });
  spindle::recv_result<int> r{recv_status::empty, std::nullopt};
  while (!(r = rx.try_recv())) {
    ASSERT_EQ(r.status, recv_status::empty);
    EXPECT_FALSE(returned.load());  // the send cannot complete before we take the value
    std::this_thread::yield();
  }
  EXPECT_EQ(*r.value, 8);
  t.join();
  EXPECT_TRUE(returned.load());
}

TEST(ZeroChannel, SendTimesOutWithoutAReceiver) {
  auto [tx, rx] = spindle::bounded<std::unique_ptr<int>>(0);
  auto r = tx.send_for(std::make_unique<int>(3), 5ms);
  EXPECT_EQ(r.status, send_status::timed_out);
  EXPECT_EQ(**r.value, 3);
  EXPECT_EQ(rx.recv_for(2ms).status, recv_status::timed_out);
  EXPECT_EQ(rx.recv_until(std::chrono::system_clock::now() + 2ms).status, recv_status::timed_out);
}

TEST(ZeroChannel, StopTokenCancelsABlockedRecv) {
  auto [tx, rx] = spindle::bounded<int>(0);
  spindle_test::expect_stop_token_cancels_blocked_recv(rx);
  EXPECT_EQ(tx.try_send(1).status, send_status::full);  // the cancelled receiver left
}

TEST(ZeroChannel, CloseWakesBlockedSendersAndReceivers) {
  auto [tx, rx] = spindle::bounded<tracked>(0);
  auto const before = tracked::live();
  std::latch started(2);
  std::thread sender([&, tx = tx]() mutable {
    started.count_down();
    auto r = tx.send(tracked(1));
    // Either a receiver below took it before the close, or it comes back.
    if (!r) {
      EXPECT_EQ(r.status, send_status::closed);
      EXPECT_EQ(r.value->id(), 1U);
    }
  });
  std::thread receiver([&, rx = rx]() mutable {
    started.count_down();
    static_cast<void>(rx.recv());
  });
  started.wait();
  rx.close();
  sender.join();
  receiver.join();
  EXPECT_EQ(tracked::live(), before);
}

TEST(ZeroChannel, LastReceiverDropFailsBlockedSends) {
  auto [tx, rx] = spindle::bounded<std::unique_ptr<int>>(0);
  std::latch started(1);
  std::thread t([&, tx = tx]() mutable {
    started.count_down();
    auto r = tx.send(std::make_unique<int>(4));
    EXPECT_EQ(r.status, send_status::closed);
    EXPECT_EQ(**r.value, 4);
  });
  started.wait();
  { auto gone = std::move(rx); }
  t.join();
}

TEST(ZeroChannel, LastSenderDropEndsRangeFor) {
  auto [tx, rx] = spindle::bounded<int>(0);
  std::thread t([tx = std::move(tx)]() mutable {
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE(tx.send(i));
    }
  });
  int expected = 0;
  for (int v : rx) {
    EXPECT_EQ(v, expected++);
  }
  EXPECT_EQ(expected, 100);
  t.join();
}

TEST(ZeroChannel, ManyProducersManyConsumersDeliverEverything) {
  spindle_test::expect_many_to_many_delivers_everything(spindle::bounded<std::uint64_t>(0),
                                                        /*producers=*/3, /*consumers=*/2,
                                                        /*per_producer=*/3000);
}

}  // namespace
