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
#include <stop_token>
#include <thread>
#include <vector>

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
  std::stop_source stop;
  std::latch started(1);
  std::thread t([&, rx = rx]() mutable {
    started.count_down();
    EXPECT_EQ(rx.recv(stop.get_token()).status, recv_status::cancelled);
  });
  started.wait();
  stop.request_stop();
  t.join();
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
  constexpr int producers = 3;
  constexpr int consumers = 2;
  constexpr std::uint64_t per_producer = 3000;
  auto [tx, rx] = spindle::bounded<std::uint64_t>(0);
  std::atomic<std::uint64_t> sum{0};
  std::atomic<std::uint64_t> count{0};
  {
    std::vector<std::jthread> threads;
    for (int c = 0; c < consumers; ++c) {
      threads.emplace_back([&, rx = rx]() mutable {
        for (auto v : rx) {
          sum.fetch_add(v, std::memory_order_relaxed);
          count.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([tx = tx]() mutable {
        for (std::uint64_t i = 1; i <= per_producer; ++i) {
          ASSERT_TRUE(tx.send(i));
        }
      });
    }
    { auto gone = std::move(tx); }
  }
  EXPECT_EQ(count.load(), producers * per_producer);
  EXPECT_EQ(sum.load(), producers * per_producer * (per_producer + 1) / 2);
}

}  // namespace
