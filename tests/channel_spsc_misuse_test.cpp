// Misuse of the spsc handles (spindle::bounded_spsc) that every build reports.
//
// A single-producer single-consumer channel has exactly one sender and one receiver handle.
// spsc_sender and spsc_receiver delete their copy operations, so a copy is a compile error
// (compile_fail/channel_spsc_copy.cpp); but they are a sender<T> and a receiver<T>, whose copy
// operations are public, so a copy can still be made through a reference to the base class,
// or by passing the handle to a function that takes a sender<T> by value. Such a copy would
// give the channel a second producer or consumer, which its ring does not allow; it prints
// "spindle: misuse: a copy of a spindle::spsc_sender" (or spsc_receiver) and aborts.
// A moved-from spsc handle is a moved-from sender<T> or receiver<T>, with the same check as
// for the other flavours (channel_misuse_test.cpp).
//
// Two threads using one handle at once is reported only by assertion builds:
// channel_spsc_overlap_test.cpp.
//
// This file is compiled without SPINDLE_ENABLE_ASSERTS, as a user's release build would be:
// the checks must not depend on it. (Misuse tests do not use the shared precompiled header,
// which would have read the library with the build's setting before this line:
// tests/CMakeLists.txt.)
#undef SPINDLE_ENABLE_ASSERTS

#include <spindle/channel.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <stop_token>
#include <utility>

namespace {

using namespace std::chrono_literals;

class SpscMisuseDeathTest : public testing::Test {
 protected:
  // Threadsafe: the child re-runs the test from the start instead of forking a process that
  // may hold other threads' locks.
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

constexpr char const* sender_copy = "misuse: a copy of a spindle::spsc_sender";
constexpr char const* receiver_copy = "misuse: a copy of a spindle::spsc_receiver";
constexpr char const* moved_sender = "misuse: use of a moved-from spindle::sender";
constexpr char const* moved_receiver = "misuse: use of a moved-from spindle::receiver";

/// Takes a sender by value: called with an spsc_sender lvalue, it copies it.
void by_value(spindle::sender<int> tx) {
  static_cast<void>(tx.try_send(1));
}
void by_value(spindle::receiver<int> rx) {
  static_cast<void>(rx.try_recv());
}

// Copy-constructing a sender<T> from an spsc_sender, through a base-class reference or by
// passing it by value, aborts.
TEST_F(SpscMisuseDeathTest, CopyingAnSpscSenderThroughTheBaseAborts) {
  auto [tx, rx] = spindle::bounded_spsc<int>(1);
  EXPECT_DEATH(
      {
        spindle::sender<int> copy = static_cast<spindle::sender<int>&>(tx);
        static_cast<void>(copy);
      },
      sender_copy);
  EXPECT_DEATH(by_value(static_cast<spindle::sender<int>&>(tx)), sender_copy);
  // Copy assignment onto another channel's sender makes the same second handle.
  auto [other_tx, other_rx] = spindle::bounded<int>(1);
  EXPECT_DEATH(other_tx = static_cast<spindle::sender<int>&>(tx), sender_copy);
  // The handle is untouched by the attempts (each died in its own child process).
  ASSERT_TRUE(tx.try_send(1));
  EXPECT_EQ(rx.try_recv().value, 1);
}

// The same for the receiver.
TEST_F(SpscMisuseDeathTest, CopyingAnSpscReceiverThroughTheBaseAborts) {
  auto [tx, rx] = spindle::bounded_spsc<int>(1);
  EXPECT_DEATH(
      {
        spindle::receiver<int> copy = static_cast<spindle::receiver<int>&>(rx);
        static_cast<void>(copy);
      },
      receiver_copy);
  EXPECT_DEATH(by_value(static_cast<spindle::receiver<int>&>(rx)), receiver_copy);
  auto [other_tx, other_rx] = spindle::bounded<int>(1);
  EXPECT_DEATH(other_rx = static_cast<spindle::receiver<int>&>(rx), receiver_copy);
  ASSERT_TRUE(tx.try_send(1));
  EXPECT_EQ(rx.try_recv().value, 1);
}

// Moving an spsc handle into a plain sender<T> / receiver<T> is allowed (the channel still has
// one handle per side), but that handle still refers to a single-producer single-consumer
// channel: copying it aborts.
TEST_F(SpscMisuseDeathTest, APlainHandleMovedFromAnSpscHandleCannotBeCopied) {
  auto [tx, rx] = spindle::bounded_spsc<int>(1);
  spindle::sender<int> plain_tx = std::move(tx);
  spindle::receiver<int> plain_rx = std::move(rx);
  ASSERT_TRUE(plain_tx.try_send(3));
  EXPECT_EQ(plain_rx.try_recv().value, 3);
  EXPECT_DEATH(
      {
        auto copy = plain_tx;
        static_cast<void>(copy);
      },
      sender_copy);
  EXPECT_DEATH(
      {
        auto copy = plain_rx;
        static_cast<void>(copy);
      },
      receiver_copy);
}

// Every operation on a moved-from spsc_sender aborts.
TEST_F(SpscMisuseDeathTest, EverySenderOperationAbortsOnAMovedFromHandle) {
  auto [tx, rx] = spindle::bounded_spsc<int>(1);
  auto kept = std::move(tx);
  EXPECT_DEATH(static_cast<void>(tx.send(1)), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.try_send(1)), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.send_for(1, 1ms)), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.send_until(1, std::chrono::steady_clock::now())), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.async_send(1)), moved_sender);
  EXPECT_DEATH(tx.close(), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.is_closed()), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.size()), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.capacity()), moved_sender);
  EXPECT_DEATH(static_cast<void>(tx.stats()), moved_sender);
  ASSERT_TRUE(kept.try_send(1));  // the handle it was moved to works
  EXPECT_EQ(rx.try_recv().value, 1);
}

// Every operation on a moved-from spsc_receiver aborts.
TEST_F(SpscMisuseDeathTest, EveryReceiverOperationAbortsOnAMovedFromHandle) {
  auto [tx, rx] = spindle::bounded_spsc<int>(1);
  auto kept = std::move(rx);
  std::stop_source stop;
  EXPECT_DEATH(static_cast<void>(rx.recv()), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.recv(stop.get_token())), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.try_recv()), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.recv_for(1ms)), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.recv_until(std::chrono::steady_clock::now())), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.async_recv()), moved_receiver);
  EXPECT_DEATH(rx.close(), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.is_closed()), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.size()), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.capacity()), moved_receiver);
  EXPECT_DEATH(static_cast<void>(rx.begin()), moved_receiver);
  EXPECT_DEATH(
      {
        for (int v : rx) {
          static_cast<void>(v);
        }
      },
      moved_receiver);
  ASSERT_TRUE(tx.try_send(2));
  EXPECT_EQ(kept.try_recv().value, 2);  // the handle it was moved to works
}

// What a moved-from spsc handle may still do: be destroyed, be assigned to (which makes it
// usable again), be moved (giving another moved-from handle).
TEST(SpscMisuse, MovedFromHandlesMayBeDestroyedAssignedAndMoved) {
  auto [tx, rx] = spindle::bounded_spsc<int>(1);
  auto tx2 = std::move(tx);
  auto rx2 = std::move(rx);
  auto tx3 = std::move(tx);  // a move of a moved-from handle is moved-from too
  tx = std::move(tx2);       // assigning makes a handle usable again
  rx = std::move(rx2);
  ASSERT_TRUE(tx.try_send(5));
  EXPECT_EQ(rx.try_recv().value, 5);
}  // destroying the moved-from tx2, tx3 and rx2 is fine

}  // namespace
