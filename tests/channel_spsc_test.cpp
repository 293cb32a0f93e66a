// spindle::bounded_spsc: the single-producer single-consumer flavour
// (detail/channel/spsc_channel.hpp) and its move-only handles, spsc_sender and spsc_receiver.
//
// The flavour promises everything bounded(n) promises (blocking, close, timeouts, stop tokens,
// select, coroutines, ranges) for one sending and one receiving thread at a time, on a ring
// that shares no line between the two sides while values flow. Its own machinery is what these
// tests aim at: the wrap-around of a ring of capacity + 1 slots and the cached positions, the
// close hand-shake between a send that is publishing and a close (a value is either received
// or handed back, never both, never lost, and nothing arrives after `closed`), the hand-back
// that destroys and rebuilds a value that cannot be assigned, and the wake-ups between a side
// that publishes without a fence and a side that sleeps behind a heavy one.
//
// Misuse (copies through the base class, moved-from handles, two threads on one handle) is in
// channel_spsc_misuse_test.cpp and channel_spsc_overlap_test.cpp; the handles' copy
// constructor is rejected at compile time (compile_fail/channel_spsc_copy.cpp).

#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <latch>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <ranges>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/channel_cases.hpp"
#include "support/no_leak.hpp"
#include "support/range_adaptors.hpp"
#include "support/sizes.hpp"
#include "support/tracked.hpp"

namespace {

using namespace std::chrono_literals;
using spindle::recv_status;
using spindle::send_status;
using spindle_test::tracked;

constexpr int scale = spindle_test::tsan_divisor(10);

/// What tracked::id() reports for a moved-from object.
constexpr std::uint64_t moved_from_id = ~std::uint64_t{0};

/// A counted payload that can be moved but not assigned (a const member): a send that meets a
/// close hands such a value back by destroying the caller's moved-from object and building a
/// new one in its place, instead of assigning.
struct pinned {
  explicit pinned(std::uint64_t i) noexcept : id(i), life(i) {}
  std::uint64_t const id;
  tracked life;
};
static_assert(std::is_nothrow_move_constructible_v<pinned>);
static_assert(!std::is_move_assignable_v<pinned>);

auto id_of(tracked const& v) -> std::uint64_t {
  return v.id();
}
auto id_of(pinned const& v) -> std::uint64_t {
  EXPECT_EQ(v.life.id(), v.id) << "the value's parts came apart";
  return v.id;
}

/// The CPU time the calling thread has used so far.
auto thread_cpu_time() -> std::chrono::nanoseconds {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

using spindle_test::no_leak;

// A producer thread owns the only sender, the consumer the only receiver. The handles cannot
// be copied, so the sender is moved into the thread; when the thread ends, the sender goes
// with it and the channel closes, which ends the consumer's range-for once it has drained.
TEST(SpscChannel, Example) {
  auto [tx, rx] = spindle::bounded_spsc<std::string>(64);  // at most 64 values buffered

  std::jthread producer([tx = std::move(tx)]() mutable {
    for (int i = 0; i < 1000; ++i) {
      // send blocks while the channel is full; it fails only if the channel was closed.
      auto r = tx.send("line " + std::to_string(i));
      ASSERT_TRUE(r);
    }
  });  // the last (and only) sender is destroyed with the thread's lambda: closed

  int n = 0;
  for (auto line : rx) {  // receives until closed and drained
    EXPECT_EQ(line, "line " + std::to_string(n));
    ++n;
  }
  EXPECT_EQ(n, 1000);
}

// ---- Handles ---------------------------------------------------------------------------------

// The handles are move-only and are a basic_sender<T> / basic_receiver<T>, so they go wherever
// those are taken by reference, but not a (copyable) sender<T> / receiver<T>; the receiver is an
// input range that is not sized.
TEST(SpscChannel, HandlesAreMoveOnlySendersAndReceivers) {
  using tx_t = spindle::spsc_sender<int>;
  using rx_t = spindle::spsc_receiver<int>;
  static_assert(std::is_same_v<decltype(spindle::bounded_spsc<int>(1)), std::pair<tx_t, rx_t>>);
  static_assert(!std::is_copy_constructible_v<tx_t> && !std::is_copy_assignable_v<tx_t>);
  static_assert(!std::is_copy_constructible_v<rx_t> && !std::is_copy_assignable_v<rx_t>);
  static_assert(std::is_nothrow_move_constructible_v<tx_t> &&
                std::is_nothrow_move_assignable_v<tx_t>);
  static_assert(std::is_nothrow_move_constructible_v<rx_t> &&
                std::is_nothrow_move_assignable_v<rx_t>);
  static_assert(std::is_base_of_v<spindle::basic_sender<int>, tx_t>);
  static_assert(std::is_base_of_v<spindle::basic_receiver<int>, rx_t>);
  // Not a sender<T> / receiver<T>, whose copies would give the channel a second handle.
  static_assert(!std::is_base_of_v<spindle::sender<int>, tx_t>);
  static_assert(!std::is_base_of_v<spindle::receiver<int>, rx_t>);
  static_assert(!std::is_convertible_v<tx_t&, spindle::sender<int>&>);
  static_assert(!std::is_constructible_v<spindle::sender<int>, tx_t&>);
  static_assert(!std::is_constructible_v<spindle::receiver<int>, rx_t&&>);
  // The common bases can be neither copied nor moved nor assigned.
  static_assert(!std::is_copy_constructible_v<spindle::basic_sender<int>>);
  static_assert(!std::is_move_constructible_v<spindle::basic_sender<int>>);
  static_assert(!std::is_copy_assignable_v<spindle::basic_sender<int>>);
  static_assert(!std::is_move_assignable_v<spindle::basic_sender<int>>);
  static_assert(!std::is_copy_constructible_v<spindle::basic_receiver<int>>);
  static_assert(!std::is_move_constructible_v<spindle::basic_receiver<int>>);
  static_assert(!std::is_copy_assignable_v<spindle::basic_receiver<int>>);
  static_assert(!std::is_move_assignable_v<spindle::basic_receiver<int>>);
  static_assert(std::ranges::input_range<rx_t>);
  static_assert(!std::ranges::sized_range<rx_t>);

  auto [tx, rx] = spindle::bounded_spsc<int>(2);
  spindle::basic_sender<int>& base_tx = tx;
  spindle::basic_receiver<int>& base_rx = rx;
  ASSERT_TRUE(base_tx.send(1));
  EXPECT_EQ(base_rx.recv(), 1);
}

// A moved handle takes the channel with it; move-assigning over a handle releases the channel
// it had, which closes when that was its only sender.
TEST(SpscChannel, HandlesMoveAndMoveAssign) {
  auto [tx, rx] = spindle::bounded_spsc<int>(2);
  auto [tx2, rx2] = spindle::bounded_spsc<int>(2);
  auto moved = std::move(tx);
  ASSERT_TRUE(moved.send(1));
  EXPECT_EQ(rx.recv(), 1);

  ASSERT_TRUE(tx2.send(7));
  tx2 = std::move(moved);  // the second channel loses its only sender: closed, 7 still there
  EXPECT_TRUE(rx2.is_closed());
  EXPECT_EQ(rx2.recv(), 7);
  EXPECT_EQ(rx2.recv(), std::nullopt);

  ASSERT_TRUE(tx2.send(2));  // tx2 now sends into the first channel
  rx2 = std::move(rx);
  EXPECT_EQ(rx2.recv(), 2);
}

// One thread at a time may use a handle, and the handle may change threads between uses: each
// thread here is joined before the next one starts, which orders the uses (and the misuse
// check of assertion builds must not mistake this for two threads at once).
TEST(SpscChannel, HandlesMayBeHandedFromThreadToThread) {
  auto [tx, rx] = spindle::bounded_spsc<int>(4);
  int next_in = 0;
  int next_out = 0;
  for (int round = 0; round < 20; ++round) {
    std::thread producer([&tx = tx, &next_in] {
      for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(tx.try_send(next_in++));
      }
    });
    producer.join();
    std::thread consumer([&rx = rx, &next_out] {
      for (int i = 0; i < 3; ++i) {
        auto r = rx.try_recv();
        ASSERT_TRUE(r);
        EXPECT_EQ(*r.value, next_out++);
      }
    });
    consumer.join();
  }
  EXPECT_EQ(next_out, 60);
}

// ---- Capacity --------------------------------------------------------------------------------

// A capacity of 0 is a rendezvous, which this flavour is not: it is refused.
TEST(SpscChannel, CapacityZeroThrowsInvalidArgument) {
  EXPECT_THROW(static_cast<void>(spindle::bounded_spsc<int>(0)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(spindle::bounded_spsc<tracked>(0)), std::invalid_argument);
}

// A capacity whose capacity + 1 slots cannot be addressed throws std::length_error before any
// allocation (no overflow of the size computation). A capacity just under that limit is
// addressable but cannot be allocated: std::bad_alloc, as documented (checked outside the
// sanitizers, whose allocators abort on such a request instead of failing).
TEST(SpscChannel, HugeCapacityThrowsLengthError) {
  constexpr auto max = std::numeric_limits<std::size_t>::max();
  EXPECT_THROW(static_cast<void>(spindle::bounded_spsc<int>(max)), std::length_error);
  EXPECT_THROW(static_cast<void>(spindle::bounded_spsc<int>(max - 1)), std::length_error);
  EXPECT_THROW(static_cast<void>(spindle::bounded_spsc<int>(max / 2)), std::length_error);
  EXPECT_THROW(static_cast<void>(spindle::bounded_spsc<tracked>(max / 2)), std::length_error);
  constexpr auto addressable = static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max());
  EXPECT_THROW(static_cast<void>(spindle::bounded_spsc<int>(addressable / sizeof(int))),
               std::length_error);
  EXPECT_THROW(static_cast<void>(spindle::bounded_spsc<tracked>(addressable / sizeof(tracked))),
               std::length_error);
  if (!spindle_test::under_thread_sanitizer && !spindle_test::under_address_sanitizer) {
    EXPECT_THROW(static_cast<void>(spindle::bounded_spsc<int>(addressable / sizeof(int) - 1)),
                 std::bad_alloc);
  }
}

// capacity() is the bound, from either handle; size() counts what is buffered (exactly, when
// nobody is sending or receiving); is_closed() starts false.
TEST(SpscChannel, CapacitySizeAndIsClosedReportTheState) {
  for (std::size_t cap : {1U, 2U, 3U, 7U, 1000U}) {
    auto [tx, rx] = spindle::bounded_spsc<int>(cap);
    EXPECT_EQ(tx.capacity(), cap);
    EXPECT_EQ(rx.capacity(), cap);
    EXPECT_EQ(tx.size(), 0U);
    EXPECT_FALSE(tx.is_closed());
    EXPECT_FALSE(rx.is_closed());
    for (std::size_t i = 1; i <= cap; ++i) {
      ASSERT_TRUE(tx.try_send(static_cast<int>(i)));
      ASSERT_EQ(rx.size(), i);
    }
    EXPECT_EQ(tx.try_send(0).status, send_status::full);
    EXPECT_EQ(tx.size(), cap);
    ASSERT_TRUE(rx.try_recv());
    EXPECT_EQ(rx.size(), cap - 1);
    tx.close();
    EXPECT_TRUE(tx.is_closed());
    EXPECT_TRUE(rx.is_closed());
    EXPECT_EQ(rx.size(), cap - 1) << "the closed mark does not disturb the count";
    EXPECT_EQ(rx.capacity(), cap);
  }
}

// try_send and try_recv report every status they can, and a value that was not sent is handed
// back unchanged.
TEST(SpscChannel, TryOperationsReportEveryStatus) {
  auto [tx, rx] = spindle::bounded_spsc<std::unique_ptr<int>>(2);
  EXPECT_EQ(rx.try_recv().status, recv_status::empty);
  EXPECT_EQ(tx.try_send(std::make_unique<int>(1)).status, send_status::sent);
  EXPECT_EQ(tx.try_send(std::make_unique<int>(2)).status, send_status::sent);
  auto full = tx.try_send(std::make_unique<int>(3));
  EXPECT_EQ(full.status, send_status::full);
  ASSERT_TRUE(full.value.has_value() && *full.value != nullptr);
  EXPECT_EQ(**full.value, 3);

  auto r = rx.try_recv();
  EXPECT_EQ(r.status, recv_status::received);
  EXPECT_EQ(**r.value, 1);
  tx.close();
  auto closed = tx.try_send(std::make_unique<int>(4));
  EXPECT_EQ(closed.status, send_status::closed);
  ASSERT_TRUE(closed.value.has_value() && *closed.value != nullptr);
  EXPECT_EQ(**closed.value, 4);
  EXPECT_EQ(**rx.try_recv().value, 2);  // still drains after close
  EXPECT_EQ(rx.try_recv().status, recv_status::closed);
  EXPECT_EQ(rx.try_recv().status, recv_status::closed);  // and stays closed
}

// Capacity 1 is a ring of two slots: every send and receive wraps, and the ring holds exactly
// one value at a time.
TEST(SpscChannel, CapacityOneAlternatesOverManyLaps) {
  auto [tx, rx] = spindle::bounded_spsc<int>(1);
  for (int i = 0; i < 10000; ++i) {
    ASSERT_TRUE(tx.try_send(i));
    ASSERT_EQ(tx.try_send(-1).status, send_status::full);
    ASSERT_EQ(rx.size(), 1U);
    ASSERT_EQ(*rx.try_recv().value, i);
    ASSERT_EQ(rx.try_recv().status, recv_status::empty);
    ASSERT_EQ(tx.size(), 0U);
  }
}

// Capacity 3 (a ring of four slots) at uneven fill levels, so that the ends meet at every slot
// with every number of values between them, and each side's cached copy of the other's
// position goes stale in every way: FIFO order, the exact bound, and an exact size throughout.
TEST(SpscChannel, CapacityThreeWrapsAroundAtEveryFillLevel) {
  auto [tx, rx] = spindle::bounded_spsc<std::uint64_t>(3);
  std::uint64_t next_in = 0;
  std::uint64_t next_out = 0;
  for (int round = 0; round < 20000; ++round) {
    auto const burst = static_cast<std::uint64_t>(round % 5);
    for (std::uint64_t i = 0; i < burst; ++i) {
      auto const r = tx.try_send(next_in);
      if (!r) {
        ASSERT_EQ(r.status, send_status::full);
        ASSERT_EQ(next_in - next_out, 3U) << "full only at the bound";
        break;
      }
      ++next_in;
    }
    ASSERT_EQ(rx.size(), next_in - next_out);
    auto const take = static_cast<std::uint64_t>(round % 3) + 1;
    for (std::uint64_t i = 0; i < take; ++i) {
      auto r = rx.try_recv();
      if (!r) {
        ASSERT_EQ(r.status, recv_status::empty);
        ASSERT_EQ(next_in, next_out) << "empty only when nothing is buffered";
        break;
      }
      ASSERT_EQ(*r.value, next_out++);
    }
    ASSERT_EQ(tx.size(), next_in - next_out);
  }
  while (auto r = rx.try_recv()) {
    ASSERT_EQ(*r.value, next_out++);
  }
  EXPECT_EQ(next_in, next_out);
  EXPECT_GT(next_in, 10000U);
}

// Several capacities, each filled to the bound and drained over several laps.
TEST(SpscChannel, EveryCapacityHoldsExactlyItsBound) {
  for (std::size_t cap : {1U, 2U, 3U, 5U, 64U, 1000U}) {
    auto [tx, rx] = spindle::bounded_spsc<std::size_t>(cap);
    for (int lap = 0; lap < 5; ++lap) {
      for (std::size_t i = 0; i < cap; ++i) {
        ASSERT_TRUE(tx.try_send(i)) << "capacity " << cap;
      }
      ASSERT_EQ(tx.try_send(cap).status, send_status::full) << "capacity " << cap;
      ASSERT_EQ(tx.size(), cap);
      for (std::size_t i = 0; i < cap; ++i) {
        ASSERT_EQ(*rx.try_recv().value, i) << "capacity " << cap;
      }
      ASSERT_EQ(rx.try_recv().status, recv_status::empty);
    }
  }
}

// ---- Values ----------------------------------------------------------------------------------

// Move-only values travel by move, and one that was not sent comes back.
TEST(SpscChannel, CarriesMoveOnlyTypes) {
  auto [tx, rx] = spindle::bounded_spsc<std::unique_ptr<int>>(2);
  ASSERT_TRUE(tx.send(std::make_unique<int>(1)));
  ASSERT_TRUE(tx.try_send(std::make_unique<int>(2)));
  auto full = tx.try_send(std::make_unique<int>(3));
  ASSERT_EQ(full.status, send_status::full);
  EXPECT_EQ(**full.value, 3);  // handed back, not dropped
  EXPECT_EQ(**rx.recv(), 1);
  EXPECT_EQ(**rx.try_recv().value, 2);
}

// Values left in the channel are destroyed exactly once when the channel dies, wherever the
// ring's ends are (here at each of its four slots in turn).
TEST(SpscChannel, DestroysValuesLeftInsideWhenItDies) {
  no_leak check;
  for (std::uint64_t shift = 0; shift < 4; ++shift) {
    auto const before = tracked::live();
    {
      auto [tx, rx] = spindle::bounded_spsc<tracked>(3);
      for (std::uint64_t i = 0; i < shift; ++i) {
        ASSERT_TRUE(tx.send(tracked(100 + i)));
        ASSERT_EQ(rx.recv()->id(), 100 + i);
      }
      for (std::uint64_t i = 0; i < 3; ++i) {
        ASSERT_TRUE(tx.send(tracked(i)));
      }
      EXPECT_EQ(tracked::live(), before + 3);
      EXPECT_EQ(rx.recv()->id(), 0U);
      EXPECT_EQ(tracked::live(), before + 2);
    }  // two values still inside
    EXPECT_EQ(tracked::live(), before);
  }
}

// A value that cannot be assigned (a const member) travels, and comes back whole from a full
// or a closed channel.
TEST(SpscChannel, CarriesValuesThatCannotBeAssigned) {
  no_leak check;
  auto [tx, rx] = spindle::bounded_spsc<pinned>(1);
  ASSERT_TRUE(tx.send(pinned(1)));
  auto full = tx.try_send(pinned(2));
  ASSERT_EQ(full.status, send_status::full);
  ASSERT_TRUE(full.value.has_value());
  EXPECT_EQ(id_of(*full.value), 2U);
  auto got = rx.recv();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(id_of(*got), 1U);
  rx.close();
  auto closed = tx.send(pinned(3));
  ASSERT_EQ(closed.status, send_status::closed);
  ASSERT_TRUE(closed.value.has_value());
  EXPECT_EQ(id_of(*closed.value), 3U);
}

// ---- Every value exactly once, between two threads -------------------------------------------

/// Which calls the two threads of expect_every_value_once_in_order use.
enum class calls : std::uint8_t {
  blocking,  // send / recv
  polling,   // try_send / try_recv, yielding when full or empty
  timed,     // send_for / recv_for with timeouts short enough to expire often
};

/// A producer thread sends ids 0 .. count - 1 as tracked values, then lets its sender go; the
/// calling thread receives until closed. Every id must arrive once and in order, every value
/// that was not sent must come back intact, and every value must be destroyed once.
void expect_every_value_once_in_order(calls how, std::size_t capacity, std::uint64_t count) {
  no_leak check;
  auto [tx, rx] = spindle::bounded_spsc<tracked>(capacity);
  std::jthread producer([how, count, tx = std::move(tx)]() mutable {
    for (std::uint64_t id = 0; id < count; ++id) {
      tracked v(id);
      for (;;) {
        auto r = how == calls::blocking  ? tx.send(std::move(v))
                 : how == calls::polling ? tx.try_send(std::move(v))
                                         : tx.send_for(std::move(v), 100us);
        if (r) {
          break;
        }
        ASSERT_EQ(r.status, how == calls::polling ? send_status::full : send_status::timed_out);
        ASSERT_TRUE(r.value.has_value());
        ASSERT_EQ(r.value->id(), id) << "a value that was not sent comes back intact";
        v = std::move(*r.value);
        if (how == calls::polling) {
          std::this_thread::yield();
        }
      }
    }
  });  // the sender goes with the thread's lambda: closed
  // Should a check below fail, closing lets a producer blocked on a full channel finish.
  struct close_on_exit {
    spindle::spsc_receiver<tracked>& rx;
    ~close_on_exit() { rx.close(); }
  } const closer{rx};

  std::uint64_t next = 0;
  for (;;) {
    std::optional<tracked> got;
    if (how == calls::blocking) {
      got = rx.recv();
      if (!got) {
        break;
      }
    } else {
      auto r = how == calls::polling ? rx.try_recv() : rx.recv_for(100us);
      if (r.status == recv_status::closed) {
        break;
      }
      if (r.status != recv_status::received) {
        ASSERT_EQ(r.status, how == calls::polling ? recv_status::empty : recv_status::timed_out);
        if (how == calls::polling) {
          std::this_thread::yield();
        }
        continue;
      }
      got = std::move(r.value);
    }
    ASSERT_EQ(got->id(), next) << "capacity " << capacity;
    ++next;
  }
  EXPECT_EQ(next, count) << "capacity " << capacity;
  EXPECT_EQ(rx.try_recv().status, recv_status::closed);
}

TEST(SpscChannel, BlockingCallsDeliverEveryValueOnceInOrder) {
  for (std::size_t cap : {1U, 3U, 64U}) {
    expect_every_value_once_in_order(calls::blocking, cap, 50000 / scale);
  }
}

TEST(SpscChannel, TryCallsDeliverEveryValueOnceInOrder) {
  for (std::size_t cap : {1U, 3U, 64U}) {
    expect_every_value_once_in_order(calls::polling, cap, 50000 / scale);
  }
}

TEST(SpscChannel, TimedCallsDeliverEveryValueOnceInOrder) {
  for (std::size_t cap : {1U, 3U, 64U}) {
    expect_every_value_once_in_order(calls::timed, cap, 20000 / scale);
  }
}

// ---- Close -----------------------------------------------------------------------------------

// After the sender closes, the receiver still gets everything buffered, in order, and then
// every receive reports the end: recv() nullopt, the others `closed`.
TEST(SpscChannel, SenderCloseLetsTheReceiverDrainFirst) {
  auto [tx, rx] = spindle::bounded_spsc<int>(4);
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(tx.send(i));
  }
  tx.close();
  EXPECT_TRUE(rx.is_closed());
  EXPECT_EQ(rx.recv(), 1);
  EXPECT_EQ(rx.try_recv().value, 2);
  EXPECT_EQ(rx.recv_for(1h).value, 3);
  EXPECT_EQ(rx.recv(), std::nullopt);
  EXPECT_EQ(rx.try_recv().status, recv_status::closed);
  EXPECT_EQ(rx.recv_for(1h).status, recv_status::closed);
  EXPECT_EQ(rx.recv_until(std::chrono::system_clock::now() + 1h).status, recv_status::closed);
  std::stop_source stop;
  EXPECT_EQ(rx.recv(stop.get_token()).status, recv_status::closed);
}

// Closing from the receiver's side stops the sender at once, but what was buffered can still
// be received.
TEST(SpscChannel, ReceiverCloseStillDrains) {
  auto [tx, rx] = spindle::bounded_spsc<int>(4);
  ASSERT_TRUE(tx.send(1));
  ASSERT_TRUE(tx.send(2));
  rx.close();
  EXPECT_TRUE(tx.is_closed());
  EXPECT_EQ(tx.send(3).status, send_status::closed);
  EXPECT_EQ(rx.recv(), 1);
  EXPECT_EQ(rx.recv(), 2);
  EXPECT_EQ(rx.recv(), std::nullopt);
}

// close() from either side, any number of times, is the same one close.
TEST(SpscChannel, CloseIsIdempotent) {
  auto [tx, rx] = spindle::bounded_spsc<int>(1);
  ASSERT_TRUE(tx.send(5));
  tx.close();
  tx.close();
  rx.close();
  EXPECT_TRUE(tx.is_closed());
  EXPECT_EQ(rx.recv(), 5);
  EXPECT_EQ(rx.recv(), std::nullopt);
}

// However the channel was closed, every kind of send reports `closed` and hands back the very
// value it was given (checked by id, and by pointer for a unique_ptr).
TEST(SpscChannel, SendAfterCloseHandsTheValueBackIntact) {
  no_leak check;
  for (int how = 0; how < 3; ++how) {
    auto [tx, rx] = spindle::bounded_spsc<tracked>(2);
    ASSERT_TRUE(tx.send(tracked(0)));
    if (how == 0) {
      tx.close();
    } else if (how == 1) {
      rx.close();
    } else {
      auto gone = std::move(rx);
    }
    auto a = tx.send(tracked(1));
    auto b = tx.try_send(tracked(2));
    auto c = tx.send_for(tracked(3), 1h);
    auto d = tx.send_until(tracked(4), std::chrono::system_clock::now() + 1h);
    std::uint64_t id = 1;
    for (auto* r : {&a, &b, &c, &d}) {
      EXPECT_EQ(r->status, send_status::closed) << "close " << how;
      ASSERT_TRUE(r->value.has_value());
      EXPECT_EQ(r->value->id(), id++) << "close " << how;
    }
  }
  auto [tx, rx] = spindle::bounded_spsc<std::unique_ptr<int>>(1);
  rx.close();
  auto p = std::make_unique<int>(7);
  int* const where = p.get();
  auto r = tx.send(std::move(p));
  ASSERT_EQ(r.status, send_status::closed);
  ASSERT_TRUE(r.value.has_value());
  EXPECT_EQ(r.value->get(), where);
  EXPECT_EQ(**r.value, 7);
}

// Dropping the receiver destroys what is buffered right away, while the sender still lives,
// and closes the channel: later sends hand their values back.
TEST(SpscChannel, DroppingTheReceiverDestroysBufferedValuesAtOnce) {
  no_leak check;
  auto const before = tracked::live();
  auto [tx, rx] = spindle::bounded_spsc<tracked>(8);
  for (std::uint64_t i = 0; i < 6; ++i) {
    ASSERT_TRUE(tx.send(tracked(i)));
  }
  ASSERT_EQ(rx.recv()->id(), 0U);  // the ring's ends are not at slot 0
  for (std::uint64_t i = 6; i < 9; ++i) {
    ASSERT_TRUE(tx.send(tracked(i)));
  }
  EXPECT_EQ(tracked::live(), before + 8);
  { auto gone = std::move(rx); }
  EXPECT_EQ(tracked::live(), before);
  EXPECT_TRUE(tx.is_closed());
  EXPECT_EQ(tx.size(), 0U);
  auto r = tx.send(tracked(99));
  EXPECT_EQ(r.status, send_status::closed);
  ASSERT_TRUE(r.value.has_value());
  EXPECT_EQ(r.value->id(), 99U);
}

// Dropping the receiver of an empty channel is clean too.
TEST(SpscChannel, DroppingAnEmptyReceiverCloses) {
  no_leak check;
  auto [tx, rx] = spindle::bounded_spsc<tracked>(1);
  { auto gone = std::move(rx); }
  EXPECT_EQ(tx.try_send(tracked(1)).status, send_status::closed);
}

// Dropping the sender closes the channel after what it sent: the receiver drains, then ends.
TEST(SpscChannel, DroppingTheSenderCloses) {
  auto [tx, rx] = spindle::bounded_spsc<int>(4);
  ASSERT_TRUE(tx.send(1));
  ASSERT_TRUE(tx.send(2));
  { auto gone = std::move(tx); }
  EXPECT_TRUE(rx.is_closed());
  EXPECT_EQ(rx.recv(), 1);
  EXPECT_EQ(rx.recv(), 2);
  EXPECT_EQ(rx.recv(), std::nullopt);
  EXPECT_EQ(rx.try_recv().status, recv_status::closed);
}

// ---- Close racing sends ------------------------------------------------------------------------

/// Who ends a race round, and how.
enum class ending : std::uint8_t {
  third_thread_closes,  // a third thread, holding the idle receiver, closes it
  third_thread_drops,   // a third thread, holding the idle receiver, destroys it
  receiver_closes,      // the receiving thread closes mid-stream, then drains
  sender_closes,        // the sending thread closes (or drops its sender) mid-stream
};

/// One round: a sender thread sends ids 0, 1, 2, ... while the channel is closed under it, as
/// the round number picks: which ending, the capacity, the send call (send, try_send,
/// send_for) and a short delay or count before the close. With capacities 1, 2 and 64 the
/// close mostly finds the sender waiting on a full ring; with 4096 it mostly finds it
/// mid-stream, where a send may have moved its value into a slot when it sees the close.
/// Checked afterwards:
///   - what the receiver got is ids 0 .. k - 1, in order, once each;
///   - every send that reported `sent` was received (or, when the receiver was dropped,
///     destroyed by the drop, while the sender still lives), and every other attempt ended in
///     exactly one `closed` that handed back that very value, intact;
///   - once a receive reported the end, nothing more arrives: after the sender has finished,
///     try_recv still reports `closed` and nothing is buffered;
///   - every value is destroyed exactly once.
/// The payload T is tracked, or pinned, which cannot be assigned: a send that published
/// nothing because close came first then destroys and rebuilds the caller's value.
template <class T>
void race_close_against_sends(std::uint32_t round) {
  std::uint32_t const h = round * 2654435761U;  // spreads the rounds over the combinations
  auto const end = static_cast<ending>(round % 4);
  std::size_t const capacity = std::array<std::size_t, 4>{1, 2, 64, 4096}[(h >> 8U) % 4];
  int const send_call = static_cast<int>((h >> 12U) % 3);
  auto const delay = std::chrono::microseconds((h >> 16U) % 40);
  std::uint64_t const close_after = (h >> 20U) % 24;

  auto const before = tracked::live();
  auto ch = spindle::bounded_spsc<T>(capacity);
  std::vector<std::uint64_t> sent;
  std::vector<std::uint64_t> handed_back;
  std::vector<std::uint64_t> received;
  // The two threads of the round start together: each yields until both have arrived (a
  // thread woken from a blocking wait would start tens of microseconds after the other).
  std::atomic<int> arrived{0};
  auto start_together = [&arrived] {
    arrived.fetch_add(1);
    while (arrived.load() < 2) {
      std::this_thread::yield();
    }
  };

  std::thread sender([&, &tx = ch.first] {
    start_together();
    bool dropped = false;
    [&] {
      std::optional<T> pending;
      for (std::uint64_t id = 0;; ++id) {
        if (end == ending::sender_closes && id == close_after) {
          if (round % 8 == 3) {
            auto gone = std::move(tx);
            dropped = true;
          }
          return;
        }
        pending.emplace(id);
        for (;;) {
          auto r = send_call == 0   ? tx.send(std::move(*pending))
                   : send_call == 1 ? tx.try_send(std::move(*pending))
                                    : tx.send_for(std::move(*pending), 50us);
          if (r.status == send_status::sent) {
            sent.push_back(id);
            break;
          }
          ASSERT_TRUE(r.value.has_value());
          ASSERT_EQ(id_of(*r.value), id) << "a value that was not sent comes back intact";
          if (r.status == send_status::closed) {
            handed_back.push_back(id);
            return;
          }
          pending.emplace(std::move(*r.value));
          std::this_thread::yield();
        }
      }
    }();
    if (!dropped) {
      tx.close();  // the sender_closes ending; otherwise closed already (or a check failed)
    }
  });

  auto drain = [&received](spindle::spsc_receiver<T>& rx) {
    while (auto v = rx.recv()) {
      received.push_back(id_of(*v));
    }
  };
  auto nothing_after_the_end = [](spindle::spsc_receiver<T>& rx) {
    EXPECT_EQ(rx.try_recv().status, recv_status::closed) << "a value arrived after `closed`";
    EXPECT_EQ(rx.size(), 0U);
  };

  switch (end) {
    case ending::third_thread_closes:
    case ending::third_thread_drops: {
      std::thread closer([&, &rx = ch.second] {
        start_together();
        auto const until = std::chrono::steady_clock::now() + delay;
        while (std::chrono::steady_clock::now() < until) {
        }
        if (end == ending::third_thread_closes) {
          rx.close();
        } else {
          auto gone = std::move(rx);
        }
      });
      closer.join();  // hands the receiver (closed, or moved from) back to this thread
      if (end == ending::third_thread_closes) {
        drain(ch.second);
      }
      sender.join();
      if (end == ending::third_thread_closes) {
        nothing_after_the_end(ch.second);
      } else {
        // The drop destroyed the buffered values; the sender still lives.
        EXPECT_EQ(tracked::live(), before) << "round " << round;
      }
      break;
    }
    case ending::receiver_closes:
    case ending::sender_closes: {
      std::latch sender_done(1);
      std::thread receiver([&, &rx = ch.second] {
        start_together();
        if (end == ending::receiver_closes) {
          for (std::uint64_t i = 0; i < close_after; ++i) {
            auto v = rx.recv();
            if (!v) {
              ADD_FAILURE() << "closed before the receiver closed it";
              break;
            }
            received.push_back(id_of(*v));
          }
          rx.close();
        }
        drain(rx);
        sender_done.wait();
        nothing_after_the_end(rx);
      });
      sender.join();
      sender_done.count_down();
      receiver.join();
      break;
    }
  }

  for (std::size_t i = 0; i < received.size(); ++i) {
    ASSERT_EQ(received[i], i) << "round " << round << ": out of order or twice";
  }
  if (end == ending::third_thread_drops) {
    EXPECT_TRUE(received.empty());
  } else {
    EXPECT_EQ(received.size(), sent.size()) << "round " << round << ": a sent value was lost";
  }
  if (end == ending::sender_closes) {
    EXPECT_EQ(sent.size(), close_after);
    EXPECT_TRUE(handed_back.empty());
  } else {
    ASSERT_EQ(handed_back.size(), 1U) << "round " << round;
    EXPECT_EQ(handed_back[0], sent.size()) << "round " << round;
  }
  { auto gone = std::move(ch); }
  EXPECT_EQ(tracked::live(), before) << "round " << round;
}

constexpr std::uint32_t race_rounds = 2000 / spindle_test::tsan_divisor(4U);

TEST(SpscCloseRace, EveryValueIsReceivedOrHandedBackExactlyOnce) {
  for (std::uint32_t round = 0; round < race_rounds; ++round) {
    race_close_against_sends<tracked>(round);
    if (testing::Test::HasFatalFailure()) {
      return;
    }
  }
}

TEST(SpscCloseRace, AValueThatCannotBeAssignedIsRebuiltWhenHandedBack) {
  for (std::uint32_t round = 0; round < race_rounds; ++round) {
    race_close_against_sends<pinned>(round);
    if (testing::Test::HasFatalFailure()) {
      return;
    }
  }
}

// ---- Timeouts and cancellation -------------------------------------------------------------

// recv_for and recv_until on an empty channel wait out their time, then report timed_out;
// a timeout of zero looks once.
TEST(SpscChannel, RecvForTimesOutOnAnEmptyChannel) {
  auto [tx, rx] = spindle::bounded_spsc<int>(1);
  auto const start = std::chrono::steady_clock::now();
  auto r = rx.recv_for(10ms);
  EXPECT_EQ(r.status, recv_status::timed_out);
  EXPECT_FALSE(r.value.has_value());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 10ms);
  EXPECT_EQ(rx.recv_until(std::chrono::system_clock::now() + 2ms).status, recv_status::timed_out);
  EXPECT_EQ(rx.recv_for(0ms).status, recv_status::timed_out);
  ASSERT_TRUE(tx.send(3));
  EXPECT_EQ(rx.recv_for(0ms).value, 3);  // a value that is there is taken, even with no time
}

// send_for and send_until on a full channel wait out their time, then report timed_out and
// hand the value back; a timeout of zero makes one try.
TEST(SpscChannel, SendForTimesOutOnAFullChannelAndHandsTheValueBack) {
  auto [tx, rx] = spindle::bounded_spsc<std::unique_ptr<int>>(1);
  ASSERT_TRUE(tx.send(std::make_unique<int>(1)));
  auto const start = std::chrono::steady_clock::now();
  auto r = tx.send_for(std::make_unique<int>(2), 10ms);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 10ms);
  EXPECT_EQ(r.status, send_status::timed_out);
  ASSERT_TRUE(r.value.has_value() && *r.value != nullptr);
  EXPECT_EQ(**r.value, 2);
  auto u = tx.send_until(std::make_unique<int>(3), std::chrono::system_clock::now() + 2ms);
  EXPECT_EQ(u.status, send_status::timed_out);
  EXPECT_EQ(**u.value, 3);
  EXPECT_EQ(tx.send_for(std::make_unique<int>(4), 0ms).status, send_status::timed_out);
  EXPECT_EQ(**rx.recv(), 1);  // nothing but the first value got in
  EXPECT_EQ(rx.try_recv().status, recv_status::empty);
}

// A send with no time to wait takes any free slot: a sender that waits holds back until more
// room is free, but its one try must not.
TEST(SpscChannel, SendForZeroTakesTheLastFreeSlot) {
  constexpr int capacity = 64;
  auto [tx, rx] = spindle::bounded_spsc<int>(capacity);
  for (int i = 0; i < capacity - 1; ++i) {
    ASSERT_TRUE(tx.try_send(i));
  }
  EXPECT_EQ(tx.send_for(capacity - 1, 0ms).status, send_status::sent);
  EXPECT_EQ(tx.send_for(capacity, 0ms).status, send_status::timed_out);
  ASSERT_TRUE(rx.try_recv());
  EXPECT_EQ(tx.send_for(capacity, 1ms).status, send_status::sent);
}

// recv(stop_token) blocked on an empty channel returns `cancelled` once another thread
// requests stop, whether the receiver was still trying or had already parked (the scenario
// every flavour shares, tests/support/channel_cases.hpp).
TEST(SpscChannel, StopTokenCancelsABlockedRecv) {
  auto [tx, rx] = spindle::bounded_spsc<int>(1);
  spindle_test::expect_stop_token_cancels_blocked_recv(rx);
  // A buffered value wins over a stop already requested.
  std::stop_source stopped;
  stopped.request_stop();
  ASSERT_TRUE(tx.send(4));
  EXPECT_EQ(rx.recv(stopped.get_token()).value, 4);
  EXPECT_EQ(rx.recv(stopped.get_token()).status, recv_status::cancelled);
}

// ---- Blocking and waking -------------------------------------------------------------------

// A receiver that has waited long enough to park (the polls and yields last about 0.1 ms) is
// woken by a send; stats() shows that it did sleep.
TEST(SpscChannel, ParkedReceiverIsWokenByASend) {
  auto [tx, rx] = spindle::bounded_spsc<int>(4);
  std::optional<int> got;
  std::thread receiver([&rx = rx, &got] { got = rx.recv(); });
  std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(tx.send(42));
  receiver.join();
  EXPECT_EQ(got, 42);
  EXPECT_EQ(rx.stats().blocked_receives, 1U);
  EXPECT_EQ(rx.stats().blocked_sends, 0U);
}

// A sender parked on a full channel is woken by a receive.
TEST(SpscChannel, ParkedSenderIsWokenByAReceive) {
  auto [tx, rx] = spindle::bounded_spsc<int>(1);
  ASSERT_TRUE(tx.send(1));
  send_status status = send_status::full;
  std::thread sender([&tx = tx, &status] { status = tx.send(2).status; });
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(rx.recv(), 1);
  sender.join();
  EXPECT_EQ(status, send_status::sent);
  EXPECT_EQ(rx.recv(), 2);
  EXPECT_EQ(tx.stats().blocked_sends, 1U);
}

// A sender waiting on a full channel prefers to resume once half the ring is free, but one free
// slot is always enough: here the receiver frees exactly one and then waits for the sender, so
// a sender that held out for more room would never finish. Checked while the sender is still
// trying and after it has parked.
TEST(SpscChannel, BlockedSendNeedsOnlyOneFreeSlot) {
  for (auto const pause : {0ms, 20ms}) {
    constexpr int capacity = 64;
    auto [tx, rx] = spindle::bounded_spsc<int>(capacity);
    for (int i = 0; i < capacity; ++i) {
      ASSERT_TRUE(tx.try_send(i));
    }
    auto [done_tx, done_rx] = spindle::bounded_spsc<int>(1);
    std::thread sender([&tx = tx, &done_tx = done_tx] {
      EXPECT_TRUE(tx.send(capacity));  // full: waits until the receiver frees one slot
      EXPECT_TRUE(done_tx.send(1));
    });
    std::this_thread::sleep_for(pause);
    EXPECT_EQ(rx.recv(), 0);  // one free slot, and no more until the sender reports back
    auto const done = done_rx.recv_for(10s);
    EXPECT_EQ(done.status, recv_status::received) << "pause " << pause.count() << " ms";
    if (done.status != recv_status::received) {
      rx.close();  // lets a stuck sender fail with `closed`, so the thread can be joined
    }
    sender.join();
    EXPECT_EQ(rx.size(), static_cast<std::size_t>(capacity));
  }
}

// Closing (or dropping) the sender wakes a receiver parked on the empty channel, which then
// reports the end.
TEST(SpscChannel, CloseWakesAParkedReceiver) {
  for (bool const drop : {false, true}) {
    auto [tx, rx] = spindle::bounded_spsc<int>(2);
    std::optional<int> got = -1;
    std::thread receiver([&rx = rx, &got] { got = rx.recv(); });
    std::this_thread::sleep_for(20ms);
    if (drop) {
      auto gone = std::move(tx);
    } else {
      tx.close();
    }
    receiver.join();
    EXPECT_EQ(got, std::nullopt) << (drop ? "dropped" : "closed");
  }
}

// Closing (or dropping) the receiver wakes a sender parked on the full channel, which gets its
// value back; a drop also destroys what was buffered.
TEST(SpscChannel, CloseWakesAParkedSender) {
  no_leak check;
  for (bool const drop : {false, true}) {
    auto [tx, rx] = spindle::bounded_spsc<tracked>(1);
    ASSERT_TRUE(tx.send(tracked(1)));
    std::optional<spindle::send_result<tracked>> result;
    std::thread sender([&tx = tx, &result] { result.emplace(tx.send(tracked(2))); });
    std::this_thread::sleep_for(20ms);
    if (drop) {
      auto gone = std::move(rx);
    } else {
      rx.close();
    }
    sender.join();
    ASSERT_TRUE(result.has_value());
    EXPECT_EQ(result->status, send_status::closed);
    ASSERT_TRUE(result->value.has_value());
    EXPECT_EQ(result->value->id(), 2U);
    if (!drop) {
      EXPECT_EQ(rx.recv()->id(), 1U);
      EXPECT_EQ(rx.recv(), std::nullopt);
    }
  }
}

// A receiver waiting on an empty channel sleeps: over 200 ms its thread uses little CPU (the
// polls and yields before it parks last about 0.1 ms). Likewise a sender waiting on a full
// channel.
TEST(SpscChannel, WaitingSidesDoNotSpin) {
  auto [tx, rx] = spindle::bounded_spsc<int>(1);
  std::chrono::nanoseconds receiver_cpu{};
  std::thread receiver([&rx = rx, &receiver_cpu] {
    auto const cpu = thread_cpu_time();
    auto const start = std::chrono::steady_clock::now();
    EXPECT_EQ(rx.recv_for(200ms).status, recv_status::timed_out);
    EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
    receiver_cpu = thread_cpu_time() - cpu;
  });
  receiver.join();
  EXPECT_LT(receiver_cpu, 20ms) << "the receiver spun instead of sleeping";

  ASSERT_TRUE(tx.send(1));
  std::chrono::nanoseconds sender_cpu{};
  std::thread sender([&tx = tx, &sender_cpu] {
    auto const cpu = thread_cpu_time();
    EXPECT_EQ(tx.send_for(2, 200ms).status, send_status::timed_out);
    sender_cpu = thread_cpu_time() - cpu;
  });
  sender.join();
  EXPECT_LT(sender_cpu, 20ms) << "the sender spun instead of sleeping";
}

// ---- Select ----------------------------------------------------------------------------------

// The spsc handles go to select's cases as any handle does: a ready receive and
// a ready send are chosen at once; nothing ready picks the default.
TEST(SpscSelect, ReadyCasesAreChosen) {
  auto [in_tx, in_rx] = spindle::bounded_spsc<int>(1);
  auto [out_tx, out_rx] = spindle::bounded_spsc<int>(1);
  int got = 0;
  int value = 5;
  ASSERT_TRUE(in_tx.send(7));
  ASSERT_TRUE(out_tx.send(0));  // full: the send case is not ready
  EXPECT_EQ(spindle::select(spindle::on_recv(in_rx, [&](std::optional<int> v) { got = *v; }),
                            spindle::on_send(out_tx, value, [](spindle::send_result<int>) {}),
                            spindle::on_default([] {})),
            0U);
  EXPECT_EQ(got, 7);
  ASSERT_EQ(out_rx.recv(), 0);  // room now, and nothing to receive
  bool sent = false;
  EXPECT_EQ(
      spindle::select(
          spindle::on_recv(in_rx, [](std::optional<int>) {}),
          spindle::on_send(out_tx, value, [&](spindle::send_result<int> r) { sent = r.is_sent(); }),
          spindle::on_default([] {})),
      1U);
  EXPECT_TRUE(sent);
  EXPECT_EQ(out_rx.recv(), 5);
  ASSERT_TRUE(out_tx.send(0));
  EXPECT_EQ(spindle::select(spindle::on_recv(in_rx, [](std::optional<int>) {}),
                            spindle::on_send(out_tx, value, [](spindle::send_result<int>) {}),
                            spindle::on_default([] {})),
            2U);
}

// A select with nothing ready blocks until the other thread sends, and receives that value.
TEST(SpscSelect, BlocksUntilTheOtherThreadSends) {
  no_leak check;
  for (auto const delay : {1ms, 20ms}) {
    auto [tx, rx] = spindle::bounded_spsc<tracked>(2);
    auto [idle_tx, idle_rx] = spindle::bounded_spsc<tracked>(2);
    std::thread sender([&tx = tx, delay] {
      std::this_thread::sleep_for(delay);
      EXPECT_TRUE(tx.send(tracked(9)));
    });
    std::optional<tracked> got;
    auto const i =
        spindle::select(spindle::on_recv(idle_rx, [](std::optional<tracked>) {}),
                        spindle::on_recv(rx, [&](std::optional<tracked> v) { got = std::move(v); }),
                        spindle::on_timeout(30s, [] {}));
    sender.join();
    EXPECT_EQ(i, 1U);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->id(), 9U);
  }
}

// A select sending into a full channel waits for room: a timeout that comes first leaves the
// value where it was; a receive on the other thread lets the send through, and the value moves
// into the channel exactly once.
TEST(SpscSelect, SendCaseWaitsForRoom) {
  no_leak check;
  auto [tx, rx] = spindle::bounded_spsc<tracked>(1);
  ASSERT_TRUE(tx.send(tracked(1)));
  tracked early(0);
  EXPECT_EQ(spindle::select(spindle::on_send(tx, early, [](spindle::send_result<tracked>) {}),
                            spindle::on_timeout(5ms, [] {})),
            1U);
  EXPECT_EQ(early.id(), 0U) << "an unchosen send leaves its value untouched";
  EXPECT_EQ(rx.size(), 1U);
  std::optional<tracked> first;
  std::thread receiver([&rx = rx, &first] {
    std::this_thread::sleep_for(20ms);
    first = rx.recv();
  });
  tracked v(2);
  auto const i = spindle::select(
      spindle::on_send(tx, v, [](spindle::send_result<tracked> r) { EXPECT_TRUE(r.is_sent()); }),
      spindle::on_timeout(30s, [] {}));
  receiver.join();
  EXPECT_EQ(i, 0U);
  EXPECT_EQ(v.id(), moved_from_id);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->id(), 1U);
  EXPECT_EQ(rx.recv()->id(), 2U);
}

// A closed channel is a ready case: a receive gets the buffered values, then nullopt; a send
// reports `closed` with its value handed back.
TEST(SpscSelect, ClosedChannelIsReady) {
  no_leak check;
  auto [tx, rx] = spindle::bounded_spsc<tracked>(2);
  ASSERT_TRUE(tx.send(tracked(1)));
  rx.close();
  std::vector<std::optional<std::uint64_t>> seen;
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(spindle::select(spindle::on_recv(rx,
                                               [&](std::optional<tracked> v) {
                                                 if (v) {
                                                   seen.emplace_back(v->id());
                                                 } else {
                                                   seen.emplace_back(std::nullopt);
                                                 }
                                               }),
                              spindle::on_timeout(30s, [] {})),
              0U);
  }
  ASSERT_EQ(seen.size(), 2U);
  EXPECT_EQ(seen[0], 1U);
  EXPECT_EQ(seen[1], std::nullopt);

  tracked v(3);
  std::optional<spindle::send_result<tracked>> result;
  EXPECT_EQ(spindle::select(
                spindle::on_send(
                    tx, v, [&](spindle::send_result<tracked> r) { result.emplace(std::move(r)); }),
                spindle::on_timeout(30s, [] {})),
            0U);
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->status, send_status::closed);
  ASSERT_TRUE(result->value.has_value());
  EXPECT_EQ(result->value->id(), 3U);
}

// Selects on both ends of one spsc channel, on two threads, deliver a stream in order.
TEST(SpscSelect, SelectsOnBothEndsDeliverEverythingInOrder) {
  no_leak check;
  constexpr std::uint64_t count = 2000;
  auto [tx, rx] = spindle::bounded_spsc<tracked>(3);
  std::thread producer([&tx = tx] {
    for (std::uint64_t id = 0; id < count; ++id) {
      tracked v(id);
      ASSERT_EQ(spindle::select(spindle::on_send(
                                    tx, v, [](spindle::send_result<tracked> r) { ASSERT_TRUE(r); }),
                                spindle::on_timeout(30s, [] { ADD_FAILURE() << "stuck"; })),
                0U);
    }
    tx.close();
  });
  std::uint64_t next = 0;
  for (bool open = true; open;) {
    spindle::select(spindle::on_recv(rx,
                                     [&](std::optional<tracked> v) {
                                       if (!v) {
                                         open = false;
                                         return;
                                       }
                                       EXPECT_EQ(v->id(), next);
                                       next = v->id() + 1;
                                     }),
                    spindle::on_timeout(30s, [&] {
                      ADD_FAILURE() << "stuck";
                      open = false;
                    }));
  }
  producer.join();
  EXPECT_EQ(next, count);
}

// ---- Coroutines ------------------------------------------------------------------------------

/// Sends ids 0 .. count - 1; returns how many were sent. The sender dies with the frame, which
/// closes the channel.
auto produce(spindle::spsc_sender<tracked> tx, std::uint64_t count)
    -> spindle::task<std::uint64_t> {
  std::uint64_t sent = 0;
  for (std::uint64_t id = 0; id < count; ++id) {
    auto r = co_await tx.async_send(tracked(id));
    if (!r) {
      break;
    }
    ++sent;
  }
  co_return sent;
}

/// Receives until closed; returns how many values came in order (stops counting at the first
/// one out of order).
auto consume(spindle::spsc_receiver<tracked> rx) -> spindle::task<std::uint64_t> {
  std::uint64_t in_order = 0;
  bool ordered = true;
  while (auto v = co_await rx.async_recv()) {
    ordered = ordered && v->id() == in_order;
    in_order += ordered ? 1 : 0;
  }
  co_return in_order;
}

/// Runs one awaitable in a coroutine and returns what it produced (for sync_wait).
template <class Awaitable>
auto await_one(Awaitable a) -> spindle::task<decltype(std::declval<Awaitable&>().await_resume())> {
  co_return co_await std::move(a);
}

// A producer and a consumer coroutine on an executor, each owning one handle: each suspends
// while the small channel is full or empty, and the consumer ends once the producer's frame,
// and with it the sender, is gone.
TEST(SpscAsync, CoroutinesOnAnExecutorPassEveryValueInOrder) {
  no_leak check;
  std::uint64_t const count = 5000 / scale;
  spindle::executor ex{2};
  auto [tx, rx] = spindle::bounded_spsc<tracked>(2);
  auto consumer = ex.spawn(consume(std::move(rx)));
  auto producer = ex.spawn(produce(std::move(tx), count));
  EXPECT_EQ(producer.join(), count);
  EXPECT_EQ(consumer.join(), count);
}

// A coroutine suspended in async_recv is resumed by a plain thread's send, and a thread's
// blocking recv is woken by a coroutine's async_send: threads and coroutines mix on one
// channel.
TEST(SpscAsync, ThreadsAndCoroutinesMix) {
  no_leak check;
  {
    auto [tx, rx] = spindle::bounded_spsc<tracked>(1);
    std::thread sender([&tx = tx] {
      std::this_thread::sleep_for(20ms);
      EXPECT_TRUE(tx.send(tracked(5)));
    });
    auto got = spindle::sync_wait(await_one(rx.async_recv()));
    sender.join();
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->id(), 5U);
  }
  {
    auto [tx, rx] = spindle::bounded_spsc<tracked>(1);
    std::optional<tracked> got;
    std::thread receiver([&rx = rx, &got] { got = rx.recv(); });
    std::this_thread::sleep_for(20ms);
    EXPECT_TRUE(spindle::sync_wait(await_one(tx.async_send(tracked(6)))).is_sent());
    receiver.join();
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->id(), 6U);
  }
}

// The timed and closed outcomes of the awaitable forms: async_recv_for on an empty channel and
// async_send_for on a full one time out (the value handed back), and a close ends both.
TEST(SpscAsync, TimeoutsAndCloseEndAwaits) {
  no_leak check;
  auto [tx, rx] = spindle::bounded_spsc<tracked>(1);
  auto r = spindle::sync_wait(await_one(rx.async_recv_for(10ms)));
  EXPECT_EQ(r.status, recv_status::timed_out);
  ASSERT_TRUE(tx.send(tracked(1)));
  auto s = spindle::sync_wait(await_one(tx.async_send_for(tracked(2), 10ms)));
  EXPECT_EQ(s.status, send_status::timed_out);
  ASSERT_TRUE(s.value.has_value());
  EXPECT_EQ(s.value->id(), 2U);
  rx.close();
  auto c = spindle::sync_wait(await_one(tx.async_send(tracked(3))));
  EXPECT_EQ(c.status, send_status::closed);
  ASSERT_TRUE(c.value.has_value());
  EXPECT_EQ(c.value->id(), 3U);
  EXPECT_EQ(spindle::sync_wait(await_one(rx.async_recv()))->id(), 1U);
  EXPECT_EQ(spindle::sync_wait(await_one(rx.async_recv())), std::nullopt);
}

// ---- Ranges ----------------------------------------------------------------------------------

// A range-for takes move-only values by value and ends when the channel is closed and drained.
TEST(SpscRange, RangeForStopsWhenClosedAndDrained) {
  auto [tx, rx] = spindle::bounded_spsc<std::unique_ptr<int>>(8);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(tx.send(std::make_unique<int>(i)));
  }
  tx.close();
  int expected = 0;
  for (auto v : rx) {
    EXPECT_EQ(*v, expected++);
  }
  EXPECT_EQ(expected, 5);
}

#if SPINDLE_TEST_RANGE_ADAPTORS
// take(3) receives exactly three values: the fourth is still in the channel afterwards, and
// take returns without waiting for a fourth that may never come.
TEST(SpscRange, TakeLeavesTheRestInTheChannel) {
  auto [tx, rx] = spindle::bounded_spsc<int>(8);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(tx.send(i));
  }
  int expected = 0;
  for (int v : rx | std::views::take(3)) {
    EXPECT_EQ(v, expected++);
  }
  EXPECT_EQ(expected, 3);
  EXPECT_EQ(rx.size(), 1U);
  EXPECT_EQ(rx.recv(), 3);  // nothing was lost
  // Exactly three buffered and the channel left open: take(3) must not wait for more.
  for (int i = 4; i < 7; ++i) {
    ASSERT_TRUE(tx.send(i));
  }
  int sum = 0;
  for (int v : rx | std::views::take(3)) {
    sum += v;
  }
  EXPECT_EQ(sum, 4 + 5 + 6);
  EXPECT_EQ(rx.try_recv().status, recv_status::empty);
}
#endif

}  // namespace
