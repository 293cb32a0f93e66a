// spindle::bounded_lanes: the lanes flavour (detail/channel/lanes_channel.hpp), a bounded
// channel of one ring ("lane") per sender handle. Handles and the semantics every flavour
// shares are in channel_test.cpp; the parameterized suites (async_test.cpp, select_test.cpp,
// channel_deadline_test.cpp, stress/channel_stress_test.cpp) run it as well.
//
// What is its own, and what these tests aim at: the lane a handle gets (the first lane 0, each
// copy the next, round robin; a move keeps it), a send that waits only for its own lane while
// the others still accept, FIFO per handle and no more, receivers that scan every lane that
// has had a handle (one handed out after a receiver started waiting included) and starve none,
// and a close that is marked lane by lane but still fails every later send, drains every lane
// and discards every buffered value exactly once.

#include <spindle/channel.hpp>
#include <spindle/detail/sync/available_cpus.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/channel_cases.hpp"
#include "support/eventually.hpp"
#include "support/no_leak.hpp"
#include "support/sizes.hpp"
#include "support/tracked.hpp"

namespace {

using namespace std::chrono_literals;
using spindle::recv_status;
using spindle::send_status;
using spindle_test::no_leak;
using spindle_test::tracked;

constexpr int scale = spindle_test::tsan_divisor(10);

/// What tracked::id() reports for a moved-from object.
constexpr std::uint64_t moved_from_id = ~std::uint64_t{0};

/// How long a step that only waits for another thread may take before the test calls it stuck.
/// Generous: sanitizer builds on a loaded machine are slow.
constexpr auto limit = 10s;

/// Encodes (handle, sequence) in one word, so a receiver can check the order per handle.
constexpr auto tag(std::uint64_t handle, std::uint64_t seq) -> std::uint64_t {
  return (handle << 32) | seq;
}
constexpr auto handle_of(std::uint64_t v) -> std::uint64_t {
  return v >> 32;
}
constexpr auto seq_of(std::uint64_t v) -> std::uint64_t {
  return v & 0xffffffffU;
}

/// Waits until `done()` holds or `limit` passes; returns whether it held.
auto eventually(auto done) -> bool {
  return spindle_test::eventually(done, limit);
}

/// Closes a channel when it goes out of scope: declared after a thread that may block on the
/// channel, it lets that thread return (and be joined) when the test stops early.
template <class T>
class close_at_exit {
 public:
  explicit close_at_exit(spindle::receiver<T> rx) : rx_(std::move(rx)) {}
  close_at_exit(close_at_exit const&) = delete;
  auto operator=(close_at_exit const&) -> close_at_exit& = delete;
  ~close_at_exit() { rx_.close(); }

 private:
  spindle::receiver<T> rx_;
};

/// Runs one awaitable in a coroutine and returns what it produced (for sync_wait).
template <class Awaitable>
auto await_one(Awaitable a) -> spindle::task<decltype(std::declval<Awaitable&>().await_resume())> {
  co_return co_await std::move(a);
}

// Producers that each hold their own copy of the sender never share a lane's positions; one
// consumer receives everything, in order per producer, and the channel closes when the last
// producer's copy goes away.
TEST(LanesChannel, Example) {
  // Four lanes of 16 slots: one per producer below.
  auto [tx, rx] = spindle::bounded_lanes<std::uint64_t>(16, 4);
  EXPECT_EQ(tx.capacity(), 64U);
  {
    std::vector<std::jthread> producers;
    for (std::uint64_t p = 0; p < 4; ++p) {
      producers.emplace_back([p, tx = tx]() mutable {  // a copy: a lane of its own
        for (std::uint64_t i = 0; i < 1000; ++i) {
          ASSERT_TRUE(tx.send(tag(p, i)));  // waits only while this lane is full
        }
      });
    }
    { auto gone = std::move(tx); }  // the producers hold the remaining senders
    std::vector<std::uint64_t> next(4, 0);
    for (auto v : rx) {  // until the last producer is gone and every lane is drained
      if (handle_of(v) >= 4) {
        ADD_FAILURE() << "a value no producer sent: " << v;
        continue;
      }
      EXPECT_EQ(seq_of(v), next[handle_of(v)]++) << "producer " << handle_of(v);
    }
    EXPECT_EQ(next, std::vector<std::uint64_t>(4, 1000));
  }
}

// ---- Creating channels ---------------------------------------------------------------------

TEST(LanesChannel, CapacityIsLanesTimesLaneCapacity) {
  auto [tx, rx] = spindle::bounded_lanes<int>(3, 4);
  EXPECT_EQ(tx.capacity(), 12U);
  EXPECT_EQ(rx.capacity(), 12U);
  auto copy = tx;
  EXPECT_EQ(copy.capacity(), 12U) << "a copy takes a lane, not more room";
  auto [tx1, rx1] = spindle::bounded_lanes<int>(1, 1);
  EXPECT_EQ(tx1.capacity(), 1U);
}

// lanes == 0 leaves the count to the channel: one lane per processor the process may use, at
// most 64.
TEST(LanesChannel, DefaultLaneCountIsOnePerProcessorAtMost64) {
  for (std::size_t lane_capacity : {std::size_t{1}, std::size_t{5}}) {
    auto [tx, rx] = spindle::bounded_lanes<int>(lane_capacity);
    auto const cap = tx.capacity();
    ASSERT_EQ(cap % lane_capacity, 0U) << "lane capacity " << lane_capacity;
    auto const lanes = cap / lane_capacity;
    EXPECT_GE(lanes, 1U);
    EXPECT_LE(lanes, 64U);
    EXPECT_EQ(lanes, std::clamp<std::size_t>(spindle::detail::available_cpus(), 1, 64));
    auto [tx0, rx0] = spindle::bounded_lanes<int>(lane_capacity, 0);
    EXPECT_EQ(tx0.capacity(), cap) << "0 lanes is the default";
  }
  // Every one of the default lanes is a lane a handle can fill: the first handle and its
  // copies fill one each, and then the next copy finds its lane (the first again) full.
  auto [tx, rx] = spindle::bounded_lanes<int>(1);
  auto const lanes = tx.capacity();
  ASSERT_TRUE(tx.try_send(0));
  std::vector<spindle::sender<int>> copies;
  for (std::size_t i = 1; i < lanes; ++i) {
    copies.push_back(tx);  // lane i
    ASSERT_TRUE(copies.back().try_send(static_cast<int>(i))) << "lane " << i;
  }
  EXPECT_EQ(rx.size(), lanes);
  auto next = tx;
  EXPECT_EQ(next.try_send(-1).status, send_status::full) << "every lane is taken";
}

TEST(LanesChannel, BadSizesThrow) {
  constexpr auto max = std::numeric_limits<std::size_t>::max();
  EXPECT_THROW(static_cast<void>(spindle::bounded_lanes<int>(0, 2)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(spindle::bounded_lanes<int>(0)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(spindle::bounded_lanes<int>(1, 4097)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(spindle::bounded_lanes<int>(1, max)), std::invalid_argument);
  // lanes * lane_capacity overflows.
  EXPECT_THROW(static_cast<void>(spindle::bounded_lanes<int>(max / 2, 4)), std::length_error);
  EXPECT_THROW(static_cast<void>(spindle::bounded_lanes<int>(max / 4096 + 1, 4096)),
               std::length_error);
  // The product fits in a size_t, but not one lane in memory (as bounded(n) for such n).
  EXPECT_THROW(static_cast<void>(spindle::bounded_lanes<int>(max, 1)), std::length_error);
  EXPECT_THROW(static_cast<void>(spindle::bounded_lanes<int>(max / 8, 2)), std::length_error);
  // The largest lane count is accepted.
  auto [tx, rx] = spindle::bounded_lanes<int>(1, 4096);
  EXPECT_EQ(tx.capacity(), 4096U);
}

TEST(LanesChannel, SizeCountsEveryLane) {
  auto [tx, rx] = spindle::bounded_lanes<int>(3, 3);
  auto b = tx;
  auto c = tx;
  EXPECT_EQ(rx.size(), 0U);
  ASSERT_TRUE(tx.try_send(1));
  ASSERT_TRUE(b.try_send(2));
  ASSERT_TRUE(b.try_send(3));
  ASSERT_TRUE(c.try_send(4));
  EXPECT_EQ(rx.size(), 4U);
  EXPECT_EQ(tx.size(), 4U);
  ASSERT_TRUE(rx.try_recv());
  EXPECT_EQ(b.size(), 3U);
  rx.close();
  EXPECT_EQ(rx.size(), 3U) << "the closed mark does not disturb the count";
}

// ---- Lanes and handles ---------------------------------------------------------------------

// The first handle has lane 0, each copy the next lane, round robin: with 3 lanes of one slot
// the fourth handle shares the first one's lane, and a full lane blocks every handle on it.
TEST(LanesChannel, CopiesTakeLanesRoundRobin) {
  auto [tx, rx] = spindle::bounded_lanes<int>(1, 3);
  auto c1 = tx;
  auto c2 = tx;
  auto c3 = c1;  // copied from any handle: the next lane in turn is lane 0 again
  ASSERT_TRUE(tx.try_send(0));
  EXPECT_EQ(c3.try_send(3).status, send_status::full) << "lane 0 is shared with the first handle";
  ASSERT_TRUE(c1.try_send(1));
  ASSERT_TRUE(c2.try_send(2));
  EXPECT_EQ(rx.size(), 3U);
  EXPECT_EQ(tx.try_send(9).status, send_status::full);
  EXPECT_EQ(c1.try_send(9).status, send_status::full);
  EXPECT_EQ(c2.try_send(9).status, send_status::full);
}

// Copy assignment is a copy (a lane of its own); move construction and move assignment carry
// the lane along.
TEST(LanesChannel, AMoveKeepsTheLaneACopyTakesTheNext) {
  auto [tx, rx] = spindle::bounded_lanes<int>(1, 2);
  ASSERT_TRUE(tx.try_send(1));  // lane 0 full
  auto moved = std::move(tx);
  auto r = moved.try_send(2);
  EXPECT_EQ(r.status, send_status::full) << "the moved-to handle sends into lane 0";
  EXPECT_EQ(r.value, 2);

  auto other = spindle::bounded_lanes<int>(1, 2);
  auto assigned = std::move(other.first);  // a sender of another channel until assigned
  assigned = std::move(moved);
  EXPECT_EQ(assigned.try_send(3).status, send_status::full) << "move assignment keeps lane 0";

  auto third = spindle::bounded_lanes<int>(1, 2);
  auto copy_assigned = std::move(third.first);
  copy_assigned = assigned;
  EXPECT_TRUE(copy_assigned.try_send(4)) << "a copy takes the next lane, lane 1";
  EXPECT_EQ(copy_assigned.try_send(5).status, send_status::full);
  EXPECT_EQ(rx.size(), 2U);
}

// The values of a handle that is gone stay in its lane and are still received.
TEST(LanesChannel, ValuesOfADestroyedCopyAreStillReceived) {
  auto [tx, rx] = spindle::bounded_lanes<int>(2, 4);
  {
    auto a = tx;
    auto b = tx;
    ASSERT_TRUE(a.try_send(1));
    ASSERT_TRUE(b.try_send(2));
    ASSERT_TRUE(b.try_send(3));
  }
  std::vector<int> got;
  while (auto r = rx.try_recv()) {
    got.push_back(*r.value);
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<int>{1, 2, 3}));
}

// ---- Order ---------------------------------------------------------------------------------

// Values sent through one handle arrive in their order, whatever the other handles send in
// between; with more handles than lanes, handles that share a lane keep theirs too.
TEST(LanesChannel, EachHandleKeepsItsOrder) {
  for (std::size_t lanes : {std::size_t{2}, std::size_t{3}, std::size_t{8}}) {
    SCOPED_TRACE(lanes);
    auto [tx, rx] = spindle::bounded_lanes<std::uint64_t>(64, lanes);
    std::vector<spindle::sender<std::uint64_t>> handles;
    handles.push_back(std::move(tx));
    for (int i = 0; i < 4; ++i) {
      auto copy = handles.front();
      handles.push_back(std::move(copy));
    }
    std::vector<std::uint64_t> next_in(handles.size(), 0);
    std::vector<std::uint64_t> next_out(handles.size(), 0);
    std::uint64_t in_flight = 0;
    for (std::uint64_t round = 0; round < 3000; ++round) {
      auto const h = (round * 7 + round / 5) % handles.size();
      if (handles[h].try_send(tag(h, next_in[h]))) {
        ++next_in[h];
        ++in_flight;
      }
      if (round % 3 != 0 && in_flight > 0) {
        auto r = rx.try_recv();
        ASSERT_TRUE(r) << "a value is buffered";
        auto const from = handle_of(*r.value);
        ASSERT_EQ(seq_of(*r.value), next_out[from]++) << "handle " << from;
        --in_flight;
      }
    }
    while (auto r = rx.try_recv()) {
      auto const from = handle_of(*r.value);
      ASSERT_EQ(seq_of(*r.value), next_out[from]++) << "handle " << from;
    }
    EXPECT_EQ(next_in, next_out);
  }
}

// With one lane every handle shares it: the channel is then one FIFO, across copies too.
TEST(LanesChannel, OneLaneIsOneFifoForEveryHandle) {
  auto [tx, rx] = spindle::bounded_lanes<int>(8, 1);
  EXPECT_EQ(tx.capacity(), 8U);
  auto b = tx;
  auto c = b;
  for (int lap = 0; lap < 50; ++lap) {
    ASSERT_TRUE(tx.try_send(0));
    ASSERT_TRUE(b.try_send(1));
    ASSERT_TRUE(c.try_send(2));
    ASSERT_TRUE(tx.try_send(3));
    for (int v = 0; v < 4; ++v) {
      ASSERT_EQ(rx.try_recv().value, v);
    }
  }
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE((i % 2 == 0 ? b : c).try_send(i));
  }
  EXPECT_EQ(tx.try_send(8).status, send_status::full) << "one lane: one bound for all";
}

TEST(LanesChannel, ManyProducersManyConsumersDeliverEverything) {
  // As many producers as lanes, and more producers than lanes (lanes shared round robin).
  spindle_test::expect_many_to_many_delivers_everything(spindle::bounded_lanes<std::uint64_t>(4, 3),
                                                        /*producers=*/3, /*consumers=*/3,
                                                        /*per_producer=*/5000 / scale);
  spindle_test::expect_many_to_many_delivers_everything(spindle::bounded_lanes<std::uint64_t>(2, 2),
                                                        /*producers=*/5, /*consumers=*/2,
                                                        /*per_producer=*/5000 / scale);
  spindle_test::expect_many_to_many_delivers_everything(spindle::bounded_lanes<std::uint64_t>(8),
                                                        /*producers=*/4, /*consumers=*/4,
                                                        /*per_producer=*/5000 / scale);
}

// Producer threads, each sending through its own copy, and one consumer that checks the order
// of every producer's values; with fewer, as many and more lanes than producers.
TEST(LanesChannel, OneConsumerSeesEveryProducerInOrder) {
  constexpr std::uint64_t producers = 5;
  constexpr std::uint64_t per_producer = 5000 / scale;
  for (std::size_t lanes : {std::size_t{2}, std::size_t{5}, std::size_t{16}}) {
    SCOPED_TRACE(lanes);
    auto ch = spindle::bounded_lanes<std::uint64_t>(3, lanes);
    auto tx = std::move(ch.first);
    auto rx = std::move(ch.second);
    std::latch start(producers + 1);
    std::vector<std::uint64_t> next(producers, 0);
    std::uint64_t bad = 0;
    {
      std::vector<std::jthread> threads;
      for (std::uint64_t p = 0; p < producers; ++p) {
        threads.emplace_back([&start, p, tx = tx]() mutable {
          start.arrive_and_wait();
          for (std::uint64_t i = 0; i < per_producer; ++i) {
            ASSERT_TRUE(tx.send(tag(p, i)));
          }
        });
      }
      { auto gone = std::move(tx); }
      start.arrive_and_wait();
      for (auto v : rx) {
        auto const p = handle_of(v);
        if (p >= producers || seq_of(v) != next[p]) {
          ++bad;
          continue;
        }
        ++next[p];
      }
    }
    EXPECT_EQ(bad, 0U) << "values out of order or unknown";
    EXPECT_EQ(next, std::vector<std::uint64_t>(producers, per_producer));
  }
}

// A receiver that keeps finding values in one lane still visits the others: a lane that is
// kept full does not starve a value in another lane for more than burst (32) * lanes receives.
TEST(LanesChannel, ABusyLaneDoesNotStarveTheOthers) {
  constexpr std::size_t lanes = 2;
  constexpr std::size_t bound = 32 * lanes;
  auto [busy, rx] = spindle::bounded_lanes<int>(64, lanes);
  auto quiet = busy;  // lane 1
  for (int round = 0; round < 20; ++round) {
    while (busy.try_send(0)) {
    }
    ASSERT_TRUE(quiet.try_send(1));
    std::size_t receives = 0;
    for (bool found = false; !found;) {
      auto r = rx.try_recv();
      ASSERT_TRUE(r);
      ++receives;
      found = *r.value == 1;
      if (!found) {
        ASSERT_TRUE(busy.try_send(0)) << "the busy lane is refilled at once";
      }
      ASSERT_LE(receives, bound) << "round " << round << ": the quiet lane was starved";
    }
  }
}

// ---- A send waits for its own lane only ----------------------------------------------------

TEST(LanesChannel, AFullLaneBlocksOnlyItsOwnHandles) {
  auto [a, rx] = spindle::bounded_lanes<std::unique_ptr<int>>(1, 2);
  auto b = a;  // lane 1
  ASSERT_TRUE(a.try_send(std::make_unique<int>(1)));
  auto full = a.try_send(std::make_unique<int>(2));
  EXPECT_EQ(full.status, send_status::full);
  ASSERT_TRUE(full.value.has_value());
  EXPECT_EQ(**full.value, 2) << "handed back, not dropped";
  auto timed_out = a.send_for(std::make_unique<int>(3), 20ms);
  EXPECT_EQ(timed_out.status, send_status::timed_out);
  ASSERT_TRUE(timed_out.value.has_value());
  EXPECT_EQ(**timed_out.value, 3);
  // The channel as a whole has room: another handle's lane still takes a value.
  EXPECT_TRUE(b.try_send(std::make_unique<int>(10)));
  EXPECT_EQ(b.send_for(std::make_unique<int>(11), 0ms).status, send_status::timed_out);
  EXPECT_EQ(rx.size(), 2U);
}

// A sender blocked on its full lane: another handle's lane still accepts meanwhile, and a
// receive that frees the other lane does not release it; the receive that frees its own lane
// does.
TEST(LanesChannel, ASlotFreedInItsLaneWakesABlockedSender) {
  auto ch = spindle::bounded_lanes<int>(1, 2);
  auto a = std::move(ch.first);
  auto rx = std::move(ch.second);
  auto b = a;  // lane 1
  ASSERT_TRUE(a.try_send(1));
  std::atomic<bool> done{false};
  std::latch started(1);
  std::jthread blocked([&] {
    started.count_down();
    EXPECT_TRUE(a.send(2));  // lane 0 is full: waits
    done.store(true);
  });
  close_at_exit<int> unblock(rx);
  started.wait();
  std::this_thread::sleep_for(20ms);  // most likely parked by now; correct either way
  EXPECT_FALSE(done.load()) << "sent into a full lane";
  ASSERT_TRUE(b.try_send(10)) << "another handle's lane still accepts";
  EXPECT_EQ(b.try_send(11).status, send_status::full);

  // Receive until lane 0's value comes out; lane 1's value, if first, must not release it.
  std::vector<int> got;
  while (got.empty() || got.back() != 1) {
    auto r = rx.recv_for(limit);
    ASSERT_EQ(r.status, recv_status::received);
    got.push_back(*r.value);
    if (got.back() == 10) {
      EXPECT_FALSE(done.load()) << "room in lane 1 released a sender waiting for lane 0";
    }
  }
  ASSERT_TRUE(eventually([&] { return done.load(); })) << "the sender was not woken";
  blocked.join();
  while (auto r = rx.try_recv()) {
    got.push_back(*r.value);
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<int>{1, 2, 10}));
}

// As for bounded(n): one free slot in the lane is enough, whether the sender still polls or
// has parked.
TEST(LanesChannel, ABlockedSenderNeedsOnlyOneFreeSlotInItsLane) {
  for (auto const pause : {0ms, 20ms}) {
    constexpr int lane_capacity = 64;
    auto ch = spindle::bounded_lanes<int>(lane_capacity, 3);
    auto tx = std::move(ch.first);
    auto rx = std::move(ch.second);
    for (int i = 0; i < lane_capacity; ++i) {
      ASSERT_TRUE(tx.try_send(i));
    }
    auto done = spindle::bounded<int>(1);
    std::thread t([&tx, done_tx = done.first]() mutable {
      EXPECT_TRUE(tx.send(lane_capacity));
      EXPECT_TRUE(done_tx.send(1));
    });
    std::this_thread::sleep_for(pause);
    EXPECT_EQ(*rx.recv(), 0);  // the only lane with values
    auto const reported = done.second.recv_for(limit);
    EXPECT_EQ(reported.status, recv_status::received) << "pause " << pause.count() << " ms";
    if (reported.status != recv_status::received) {
      rx.close();  // lets a stuck sender fail, so that the thread can be joined
    }
    t.join();
    EXPECT_EQ(rx.size(), static_cast<std::size_t>(lane_capacity));
  }
}

// ---- Close ---------------------------------------------------------------------------------

// After close(), every send through every handle, copies made after the close and lanes that
// no handle had before it included, fails with `closed` and hands its value back.
TEST(LanesChannel, SendsAfterCloseFailAndHandTheValueBack) {
  auto [tx, rx] = spindle::bounded_lanes<std::unique_ptr<int>>(2, 4);
  auto b = tx;  // lane 1; lanes 2 and 3 have no handle yet
  ASSERT_TRUE(tx.try_send(std::make_unique<int>(0)));
  rx.close();
  EXPECT_TRUE(tx.is_closed());
  EXPECT_TRUE(b.is_closed());
  auto late1 = tx;  // lane 2
  auto late2 = b;   // lane 3
  auto late3 = b;   // lane 0 again
  std::stop_source never;
  int n = 1;
  for (auto* h : {&tx, &b, &late1, &late2, &late3}) {
    auto const expect_back = [](auto r, int v) {
      EXPECT_EQ(r.status, send_status::closed);
      ASSERT_TRUE(r.value.has_value());
      ASSERT_NE(*r.value, nullptr);
      EXPECT_EQ(**r.value, v);
    };
    expect_back(h->try_send(std::make_unique<int>(n)), n);
    expect_back(h->send(std::make_unique<int>(n + 1)), n + 1);
    expect_back(h->send_for(std::make_unique<int>(n + 2), 1h), n + 2);
    expect_back(h->send(std::make_unique<int>(n + 3), never.get_token()), n + 3);
    n += 4;
  }
  EXPECT_EQ(rx.size(), 1U);
  EXPECT_EQ(**rx.recv(), 0) << "buffered before the close: still received";
  EXPECT_EQ(rx.recv(), std::nullopt);
}

// Values buffered in several lanes are all received after close, each handle's in order, and
// only then does the channel report closed, to every form of receive.
TEST(LanesChannel, BufferedValuesInEveryLaneAreReceivedAfterClose) {
  auto [tx, rx] = spindle::bounded_lanes<std::uint64_t>(4, 3);
  std::vector<spindle::sender<std::uint64_t>> handles;
  for (int i = 0; i < 3; ++i) {
    handles.push_back(tx);  // lanes 1, 2, 0
  }
  for (std::uint64_t h = 0; h < handles.size(); ++h) {
    for (std::uint64_t i = 0; i < 3; ++i) {
      ASSERT_TRUE(handles[h].try_send(tag(h, i)));
    }
  }
  tx.close();
  EXPECT_TRUE(rx.is_closed());
  std::vector<std::uint64_t> next(handles.size(), 0);
  std::size_t got = 0;
  for (auto v : rx) {
    ASSERT_LT(handle_of(v), handles.size());
    EXPECT_EQ(seq_of(v), next[handle_of(v)]++);
    ++got;
  }
  EXPECT_EQ(got, 9U);
  EXPECT_EQ(rx.try_recv().status, recv_status::closed);
  EXPECT_EQ(rx.recv(), std::nullopt);
  EXPECT_EQ(rx.recv_for(1h).status, recv_status::closed);
  std::stop_source never;
  EXPECT_EQ(rx.recv(never.get_token()).status, recv_status::closed);
}

TEST(LanesChannel, LastSenderDropClosesAfterDrain) {
  auto [tx, rx] = spindle::bounded_lanes<int>(2, 2);
  auto b = tx;
  ASSERT_TRUE(tx.send(1));
  ASSERT_TRUE(b.send(2));
  { auto gone = std::move(tx); }
  EXPECT_FALSE(rx.is_closed()) << "b still lives";
  ASSERT_TRUE(b.send(3));
  { auto gone = std::move(b); }
  EXPECT_TRUE(rx.is_closed());
  std::vector<int> got;
  while (auto v = rx.recv()) {
    got.push_back(*v);
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(rx.try_recv().status, recv_status::closed);
}

// The last receiver going away destroys every buffered value in every lane at once, each
// exactly once; the senders then see the channel closed and get their values back.
TEST(LanesChannel, LastReceiverDropDestroysEveryBufferedValueAtOnce) {
  no_leak check;
  auto const before = tracked::live();
  auto [tx, rx] = spindle::bounded_lanes<tracked>(2, 3);
  std::vector<spindle::sender<tracked>> handles;
  for (int i = 0; i < 4; ++i) {
    handles.push_back(tx);  // lanes 1, 2, 0, 1
  }
  std::uint64_t id = 0;
  for (auto& h : handles) {
    while (h.try_send(tracked(id))) {  // fills the handle's lane
      ++id;
    }
  }
  ASSERT_EQ(id, 6U) << "three lanes of two slots";
  EXPECT_EQ(tracked::live(), before + 6);
  auto rx2 = rx;
  { auto gone = std::move(rx); }
  EXPECT_EQ(tracked::live(), before + 6) << "another receiver lives";
  EXPECT_FALSE(tx.is_closed());
  { auto gone = std::move(rx2); }
  EXPECT_EQ(tracked::live(), before) << "eager discard: the senders still live";
  EXPECT_TRUE(tx.is_closed());
  for (auto& h : handles) {
    auto r = h.send(tracked(100));
    EXPECT_EQ(r.status, send_status::closed);
    ASSERT_TRUE(r.value.has_value());
    EXPECT_EQ(r.value->id(), 100U);
  }
}

// Senders blocked on their full lanes are woken when the last receiver goes away, with their
// values back, and the buffered values are gone at once.
TEST(LanesChannel, LastReceiverDropWakesSendersBlockedOnTheirLanes) {
  no_leak check;
  constexpr int lanes = 3;
  auto ch = spindle::bounded_lanes<tracked>(1, lanes);
  auto tx = std::move(ch.first);
  auto rx = std::move(ch.second);
  auto const before = tracked::live();
  std::vector<spindle::sender<tracked>> handles;
  for (int i = 0; i < lanes; ++i) {
    handles.push_back(tx);  // lanes 1, 2, 0
    ASSERT_TRUE(handles.back().try_send(tracked(100)));
  }
  std::latch started(lanes);
  std::atomic<int> handed_back{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < lanes; ++i) {
    threads.emplace_back([&started, &handed_back, i, h = std::move(handles[i])]() mutable {
      started.count_down();
      auto const id = static_cast<std::uint64_t>(i);
      auto r = h.send(tracked(id));
      EXPECT_EQ(r.status, send_status::closed);
      if (r.status == send_status::closed && r.value && r.value->id() == id) {
        handed_back.fetch_add(1);
      }
    });
  }
  started.wait();
  std::this_thread::sleep_for(20ms);
  { auto gone = std::move(rx); }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(handed_back.load(), lanes);
  EXPECT_EQ(tracked::live(), before) << "the buffered values were destroyed";
  EXPECT_EQ(tx.size(), 0U) << "a discarded channel holds nothing";
}

// Values left in any lane are destroyed exactly once when the channel dies.
TEST(LanesChannel, DestroysValuesLeftInsideWhenItDies) {
  no_leak check;
  {
    auto [tx, rx] = spindle::bounded_lanes<tracked>(3, 4);
    auto b = tx;
    auto c = tx;
    for (std::uint64_t i = 0; i < 3; ++i) {
      ASSERT_TRUE(tx.send(tracked(i)));
      ASSERT_TRUE(b.send(tracked(10 + i)));
    }
    ASSERT_TRUE(c.send(tracked(20)));
    ASSERT_TRUE(rx.recv().has_value());
    auto full = tx.try_send(tracked(99));
    if (full.status == send_status::full) {
      EXPECT_EQ(full.value->id(), 99U);
    }
  }
}

// A receiver blocked on an empty channel is woken by a send through a handle copied after it
// began to wait, into a lane that had no handle when it started: its scan must take in lanes
// handed out later.
TEST(LanesChannel, BlockedRecvIsWokenBySendThroughALaterCopy) {
  for (auto const pause : {0ms, 20ms}) {
    SCOPED_TRACE(pause.count());
    auto ch = spindle::bounded_lanes<int>(2, 4);
    auto tx = std::move(ch.first);
    auto rx = std::move(ch.second);
    auto got = spindle::bounded<int>(1);
    std::latch started(1);
    std::thread t([&started, rx = rx, got_tx = got.first]() mutable {
      started.count_down();
      auto v = rx.recv();
      EXPECT_TRUE(got_tx.send(v.value_or(-1)));
    });
    started.wait();
    std::this_thread::sleep_for(pause);  // with a pause the receiver has most likely parked
    auto late = tx;                      // lane 1
    auto later = late;                   // lane 2
    auto latest = later;                 // lane 3: no handle had it before the receive began
    ASSERT_TRUE(latest.send(7));
    auto const r = got.second.recv_for(limit);
    EXPECT_EQ(r.status, recv_status::received) << "the receiver was not woken";
    if (r.status != recv_status::received) {
      rx.close();  // lets the stuck receiver return, so that the thread can be joined
    } else {
      EXPECT_EQ(*r.value, 7);
    }
    t.join();
  }
}

// Receivers blocked on an empty channel are woken by close() and by the last sender going
// away, when copies (and so several lanes) exist.
TEST(LanesChannel, BlockedReceiversAreWokenByClose) {
  for (bool by_drop : {false, true}) {
    SCOPED_TRACE(by_drop ? "last sender dropped" : "close()");
    auto ch = spindle::bounded_lanes<int>(1, 3);
    auto tx = std::move(ch.first);
    auto rx = std::move(ch.second);
    auto copy = tx;
    constexpr int receivers = 3;
    std::atomic<int> finished{0};
    std::latch started(receivers);
    std::vector<std::thread> threads;
    for (int i = 0; i < receivers; ++i) {
      threads.emplace_back([&started, &finished, rx = rx]() mutable {
        started.count_down();
        EXPECT_EQ(rx.recv(), std::nullopt);
        finished.fetch_add(1);
      });
    }
    started.wait();
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(finished.load(), 0) << "a receive returned on an open, empty channel";
    if (by_drop) {
      {
        auto gone = std::move(tx);
      }
      { auto gone = std::move(copy); }
    } else {
      copy.close();
    }
    bool const woken = eventually([&] { return finished.load() == receivers; });
    EXPECT_TRUE(woken) << "blocked receivers were not woken";
    if (!woken) {
      rx.close();
    }
    for (auto& t : threads) {
      t.join();
    }
  }
}

// Senders blocked each on its own full lane are all woken by close(), each with its value
// back; what was buffered before is still received.
TEST(LanesChannel, CloseWakesSendersBlockedOnTheirLanes) {
  constexpr int lanes = 3;
  auto ch = spindle::bounded_lanes<std::unique_ptr<int>>(1, lanes);
  auto tx = std::move(ch.first);
  auto rx = std::move(ch.second);
  std::vector<spindle::sender<std::unique_ptr<int>>> handles;
  for (int i = 0; i < lanes; ++i) {
    handles.push_back(tx);  // lanes 1, 2, 0
    ASSERT_TRUE(handles.back().try_send(std::make_unique<int>(-1)));
  }
  std::latch started(lanes);
  std::atomic<int> handed_back{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < lanes; ++i) {
    threads.emplace_back([&started, &handed_back, i, h = std::move(handles[i])]() mutable {
      started.count_down();
      auto r = h.send(std::make_unique<int>(i));
      EXPECT_EQ(r.status, send_status::closed) << "nobody received: no room ever opened";
      if (r.status == send_status::closed && r.value && *r.value && **r.value == i) {
        handed_back.fetch_add(1);
      }
    });
  }
  started.wait();
  std::this_thread::sleep_for(20ms);
  rx.close();
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(handed_back.load(), lanes);
  int drained = 0;
  while (auto v = rx.recv()) {
    EXPECT_EQ(**v, -1);
    ++drained;
  }
  EXPECT_EQ(drained, lanes);
}

// close() races with producers that keep sending, and keep taking new lanes by copying
// their handles, while consumers drain: no send that starts after close() returned succeeds,
// every send that succeeded is received exactly once, and every failed one hands its value
// back.
TEST(LanesChannel, CloseRacingWithSendsAndCopiesLosesNothing) {
  constexpr std::uint64_t producers = 4;
  constexpr std::uint64_t consumers = 2;
  constexpr std::uint64_t per_producer = 2000;
  int const rounds = 20 / scale;
  for (int round = 0; round < rounds; ++round) {
    auto ch = spindle::bounded_lanes<std::uint64_t>(2, 3);
    auto tx = std::move(ch.first);
    auto rx = std::move(ch.second);
    std::vector<std::atomic<std::uint8_t>> received(producers * per_producer);
    std::atomic<std::uint64_t> sent{0};
    std::atomic<std::uint64_t> got{0};
    std::atomic<bool> close_returned{false};
    std::atomic<std::uint64_t> sent_after_close{0};
    std::atomic<std::uint64_t> bad_hand_backs{0};
    std::latch start(producers + consumers + 1);
    {
      std::vector<std::jthread> threads;
      for (std::uint64_t c = 0; c < consumers; ++c) {
        threads.emplace_back([&, rx = rx]() mutable {
          start.arrive_and_wait();
          for (auto v : rx) {
            // relaxed: counts read after every thread is joined.
            received[v].fetch_add(1, std::memory_order_relaxed);
            got.fetch_add(1, std::memory_order_relaxed);
          }
        });
      }
      for (std::uint64_t p = 0; p < producers; ++p) {
        threads.emplace_back([&, p, tx = tx]() mutable {
          start.arrive_and_wait();
          for (std::uint64_t i = 0; i < per_producer; ++i) {
            if (i % 64 == 63) {
              auto copy = tx;  // a new lane, taken while others send, receive and close
              tx = std::move(copy);
            }
            auto const id = p * per_producer + i;
            bool const after = close_returned.load();  // seq_cst, as the store below
            auto r = tx.send(id);
            if (r) {
              sent.fetch_add(1, std::memory_order_relaxed);
              sent_after_close.fetch_add(after ? 1 : 0, std::memory_order_relaxed);
            } else if (r.status != send_status::closed || r.value != id) {
              bad_hand_backs.fetch_add(1, std::memory_order_relaxed);
            }
          }
        });
      }
      threads.emplace_back([&, tx = tx]() mutable {
        start.arrive_and_wait();
        // Close once some traffic has flowed, while the producers still send.
        while (sent.load(std::memory_order_relaxed) < producers * per_producer / 4) {
          std::this_thread::yield();
        }
        tx.close();
        close_returned.store(true);
      });
      { auto gone = std::move(tx); }
      { auto gone = std::move(rx); }
    }
    ASSERT_EQ(sent_after_close.load(), 0U) << "round " << round;
    ASSERT_EQ(bad_hand_backs.load(), 0U) << "round " << round;
    ASSERT_EQ(got.load(), sent.load()) << "round " << round << ": receivers drain every lane";
    std::uint64_t twice = 0;
    for (auto& n : received) {
      twice += n.load() > 1 ? 1 : 0;
    }
    ASSERT_EQ(twice, 0U) << "round " << round;
  }
}

// ---- Timeouts and stop tokens --------------------------------------------------------------

TEST(LanesChannel, RecvForTimesOutOnAnEmptyChannel) {
  auto [tx, rx] = spindle::bounded_lanes<int>(2, 4);
  auto b = tx;
  auto c = tx;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(rx.recv_for(20ms).status, recv_status::timed_out);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
  EXPECT_EQ(rx.recv_until(std::chrono::system_clock::now() + 20ms).status, recv_status::timed_out);
  EXPECT_EQ(rx.recv_for(0ms).status, recv_status::timed_out);
  // A zero timeout still takes a value buffered in any lane.
  ASSERT_TRUE(c.try_send(5));
  auto r = rx.recv_for(0ms);
  EXPECT_EQ(r.status, recv_status::received);
  EXPECT_EQ(r.value, 5);
}

TEST(LanesChannel, StopTokenCancelsABlockedRecv) {
  auto [tx, rx] = spindle::bounded_lanes<int>(1, 3);
  auto b = tx;
  spindle_test::expect_stop_token_cancels_blocked_recv(rx);
  std::stop_source stopped;
  stopped.request_stop();
  EXPECT_EQ(rx.recv(stopped.get_token()).status, recv_status::cancelled);
  ASSERT_TRUE(b.try_send(4));
  auto r = rx.recv(stopped.get_token());  // a buffered value wins over the stop request
  EXPECT_EQ(r.status, recv_status::received);
  EXPECT_EQ(r.value, 4);
}

// send(v, stop) on a full lane: a stop requested before the call or while it waits ends it
// with `cancelled` and the value back; another handle's lane takes a value even with the stop
// requested (room wins); without a stop the send completes once its lane has room.
TEST(LanesChannel, SendWithAStopTokenOnAFullLane) {
  auto ch = spindle::bounded_lanes<std::unique_ptr<int>>(1, 2);
  auto a = std::move(ch.first);
  auto rx = std::move(ch.second);
  auto b = a;
  ASSERT_TRUE(a.try_send(std::make_unique<int>(1)));
  std::stop_source stopped;
  stopped.request_stop();
  auto r = a.send(std::make_unique<int>(2), stopped.get_token());
  EXPECT_EQ(r.status, send_status::cancelled);
  ASSERT_TRUE(r.value.has_value());
  EXPECT_EQ(**r.value, 2);
  EXPECT_TRUE(b.send(std::make_unique<int>(10), stopped.get_token())) << "room wins";

  std::stop_source later;
  std::thread stopper([&later] {
    std::this_thread::sleep_for(20ms);
    later.request_stop();
  });
  r = a.send(std::make_unique<int>(3), later.get_token());
  stopper.join();
  EXPECT_EQ(r.status, send_status::cancelled);
  ASSERT_TRUE(r.value.has_value());
  EXPECT_EQ(**r.value, 3);
  EXPECT_EQ(rx.size(), 2U) << "a cancelled send sent nothing";

  // Make room in lane 0 from another thread. The receiver may start at either lane: if it
  // takes lane 0's value first, the send may refill lane 0 before the second receive, which
  // then takes 4 and leaves 10. Either way every value comes out once, lane 0's in order.
  std::stop_source never;
  std::vector<int> got;
  std::thread taker([rx = rx, &got]() mutable {
    std::this_thread::sleep_for(20ms);
    for (int i = 0; i < 2; ++i) {
      auto v = rx.recv();
      ASSERT_TRUE(v.has_value());
      got.push_back(**v);
    }
  });
  r = a.send(std::make_unique<int>(4), never.get_token());
  taker.join();
  EXPECT_EQ(r.status, send_status::sent);
  auto last = rx.try_recv();
  ASSERT_TRUE(last);
  got.push_back(**last.value);
  EXPECT_TRUE(std::find(got.begin(), got.end(), 1) < std::find(got.begin(), got.end(), 4))
      << "lane 0 keeps its order";
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<int>{1, 4, 10}));
}

// stats(): a receive that waited for a send through another handle counts as blocked, and so
// does a send that waited for room in its own full lane while the other lane had room; calls
// that never waited count nothing. A late partner makes the call wait; it is tried again if
// it happened not to (a loaded machine may run the partner first).
TEST(LanesChannel, StatsCountCallsThatSlept) {
  auto ch = spindle::bounded_lanes<int>(1, 2);
  auto tx = std::move(ch.first);
  auto rx = std::move(ch.second);
  ASSERT_TRUE(tx.try_send(1));
  ASSERT_EQ(rx.try_recv().value, 1);
  EXPECT_EQ(tx.stats().blocked_receives, 0U);
  EXPECT_EQ(tx.stats().blocked_sends, 0U);
  EXPECT_EQ(tx.stats().waits, 0U);

  for (int attempt = 0; attempt < 5 && rx.stats().blocked_receives == 0; ++attempt) {
    std::thread late_sender([b = tx]() mutable {  // a copy: lane 1 on the first attempt
      std::this_thread::sleep_for(50ms);
      EXPECT_TRUE(b.send(7));
    });
    EXPECT_EQ(rx.recv(), 7);
    late_sender.join();
  }
  EXPECT_GE(rx.stats().blocked_receives, 1U);
  EXPECT_GE(rx.stats().waits, 1U);
  EXPECT_EQ(rx.stats().blocked_sends, 0U);

  for (int attempt = 0; attempt < 5 && tx.stats().blocked_sends == 0; ++attempt) {
    ASSERT_TRUE(tx.try_send(2));  // lane 0 full; lane 1 empty
    std::thread late_receiver([rx2 = rx]() mutable {
      std::this_thread::sleep_for(50ms);
      EXPECT_EQ(rx2.recv(), 2);
      EXPECT_EQ(rx2.recv(), 3);
    });
    EXPECT_TRUE(tx.send(3));
    late_receiver.join();
  }
  EXPECT_GE(tx.stats().blocked_sends, 1U);
}

// ---- Select --------------------------------------------------------------------------------

// on_recv over a lanes channel and another channel: a value in any lane, sent before the
// select or while it waits (through a handle copied meanwhile), is what it gets.
TEST(LanesChannel, SelectReceivesFromAnyLane) {
  no_leak check;
  auto lanes_ch = spindle::bounded_lanes<tracked>(1, 4);
  auto other = spindle::bounded<tracked>(1);
  auto& lanes_rx = lanes_ch.second;
  auto& other_rx = other.second;
  auto select_one = [&lanes_rx, &other_rx](std::optional<tracked>& got) {
    return spindle::select(
        spindle::on_recv(other_rx, [](std::optional<tracked>) { ADD_FAILURE() << "no value"; }),
        spindle::on_recv(lanes_rx, [&got](std::optional<tracked> v) { got = std::move(v); }),
        spindle::on_timeout(limit, [] { ADD_FAILURE() << "timed out"; }));
  };
  {
    auto c1 = lanes_ch.first;
    auto c2 = lanes_ch.first;  // lane 2
    ASSERT_TRUE(c2.try_send(tracked(2)));
    std::optional<tracked> got;
    EXPECT_EQ(select_one(got), 1U);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->id(), 2U);
  }
  {
    std::jthread late([&lanes_ch] {
      std::this_thread::sleep_for(20ms);
      auto c3 = lanes_ch.first;  // lane 3: had no handle when the select began
      EXPECT_TRUE(c3.send(tracked(3)));
    });
    std::optional<tracked> got;
    EXPECT_EQ(select_one(got), 1U);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->id(), 3U);
  }
  lanes_ch.first.close();
  std::optional<tracked> got(tracked(0));
  EXPECT_EQ(select_one(got), 1U);
  EXPECT_FALSE(got.has_value()) << "closed and drained";
}

// After close, on_recv still takes the values buffered in every lane, then reports the close.
TEST(LanesChannel, SelectDrainsEveryLaneAfterClose) {
  no_leak check;
  auto ch = spindle::bounded_lanes<tracked>(2, 3);
  auto& rx = ch.second;
  {
    auto b = ch.first;  // lane 1
    auto c = ch.first;  // lane 2
    ASSERT_TRUE(c.try_send(tracked(20)));
    ASSERT_TRUE(b.try_send(tracked(10)));
    ASSERT_TRUE(c.try_send(tracked(21)));
  }
  ch.first.close();
  std::vector<std::uint64_t> got;
  for (bool open = true; open;) {
    auto const i = spindle::select(spindle::on_recv(rx,
                                                    [&](std::optional<tracked> v) {
                                                      if (v) {
                                                        got.push_back(v->id());
                                                      } else {
                                                        open = false;
                                                      }
                                                    }),
                                   spindle::on_timeout(limit, [&] {
                                     ADD_FAILURE() << "stuck";
                                     open = false;
                                   }));
    EXPECT_EQ(i, 0U);
  }
  ASSERT_EQ(got.size(), 3U);
  auto const lane2 = std::find(got.begin(), got.end(), 20U);
  EXPECT_TRUE(lane2 < std::find(got.begin(), got.end(), 21U)) << "lane 2 in its order";
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::uint64_t>{10, 20, 21}));
}

// on_send goes into the lane of the handle it names: with a's lane full, a send case through
// a is not ready while one through b (another lane) is, and a waiting send case through a is
// released by room in a's lane.
TEST(LanesChannel, SelectSendGoesIntoTheHandlesLane) {
  no_leak check;
  auto ch = spindle::bounded_lanes<tracked>(1, 2);
  auto& a = ch.first;
  auto& rx = ch.second;
  auto b = a;  // lane 1
  ASSERT_TRUE(a.try_send(tracked(1)));

  tracked va(10);
  EXPECT_EQ(spindle::select(spindle::on_send(a, va, [] { ADD_FAILURE() << "a's lane is full"; }),
                            spindle::on_default([] {})),
            1U);
  EXPECT_EQ(va.id(), 10U) << "the value stays with the caller";

  tracked vb(20);
  EXPECT_EQ(spindle::select(spindle::on_send(a, va, [] {}), spindle::on_send(b, vb, [] {}),
                            spindle::on_timeout(limit, [] {})),
            1U);
  EXPECT_EQ(va.id(), 10U);
  EXPECT_EQ(vb.id(), moved_from_id);
  EXPECT_EQ(rx.size(), 2U);

  // Both lanes full now: neither case is ready.
  tracked vb2(21);
  EXPECT_EQ(spindle::select(spindle::on_send(a, va, [] {}), spindle::on_send(b, vb2, [] {}),
                            spindle::on_default([] {})),
            2U);

  // Room in lane 1 does not release a's send; room in lane 0 does.
  std::atomic<bool> done{false};
  std::jthread selecting([&] {
    EXPECT_EQ(spindle::select(
                  spindle::on_send(
                      a, va, [](spindle::send_result<tracked> r) { EXPECT_TRUE(r.is_sent()); }),
                  spindle::on_timeout(limit, [] { ADD_FAILURE() << "stuck"; })),
              0U);
    done.store(true);
  });
  std::this_thread::sleep_for(20ms);
  std::vector<std::uint64_t> got;
  while (got.empty() || got.back() != 1) {
    auto r = rx.recv_for(limit);
    ASSERT_EQ(r.status, recv_status::received);
    got.push_back(r.value->id());
    if (got.back() == 20) {
      EXPECT_FALSE(done.load()) << "room in lane 1 completed a send case on lane 0";
    }
  }
  ASSERT_TRUE(eventually([&] { return done.load(); }));
  selecting.join();
  EXPECT_EQ(va.id(), moved_from_id);
  while (auto r = rx.try_recv()) {
    got.push_back(r.value->id());
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::uint64_t>{1, 10, 20}));
}

// A select that watches the lanes channel and another one may be woken for a value sent into
// a lane and then take the other channel's value instead: a plain receiver blocked on the
// lanes channel must still get that value (the wake is not lost with the select).
TEST(LanesChannel, AWakeLeftBySelectReachesABlockedReceiver) {
  int const rounds = 200 / scale;
  for (int round = 0; round < rounds; ++round) {
    auto lanes_ch = spindle::bounded_lanes<int>(1, 2);
    auto other = spindle::bounded<int>(1);
    auto tx = std::move(lanes_ch.first);
    auto copy = tx;  // lane 1
    auto rx = std::move(lanes_ch.second);
    std::atomic<int> plain_got{0};
    std::atomic<int> select_lanes_got{0};
    std::jthread plain(
        [&plain_got, rx = rx]() mutable { plain_got.store(rx.recv().value_or(-1)); });
    std::jthread selecting([&select_lanes_got, rx = rx, other_rx = other.second]() mutable {
      spindle::select(
          spindle::on_recv(rx,
                           [&](std::optional<int> v) { select_lanes_got.store(v.value_or(-1)); }),
          spindle::on_recv(other_rx, [](std::optional<int>) {}),
          spindle::on_timeout(limit, [] { ADD_FAILURE() << "the select was never woken"; }));
    });
    if (round % 3 != 0) {
      std::this_thread::sleep_for(1ms);  // most likely both wait by now
    }
    auto& sender = round % 2 == 0 ? tx : copy;
    if (round % 4 < 2) {
      ASSERT_TRUE(other.first.send(1));
      ASSERT_TRUE(sender.send(2));
    } else {
      ASSERT_TRUE(sender.send(2));
      ASSERT_TRUE(other.first.send(1));
    }
    selecting.join();
    if (select_lanes_got.load() != 0) {
      EXPECT_EQ(select_lanes_got.load(), 2);
      ASSERT_TRUE(sender.send(3));  // the plain receiver's value
    }
    bool const woken = eventually([&] { return plain_got.load() != 0; });
    EXPECT_TRUE(woken) << "round " << round << ": the blocked receiver was not woken";
    if (!woken) {
      rx.close();
    }
    plain.join();
    EXPECT_EQ(plain_got.load(), select_lanes_got.load() != 0 ? 3 : 2) << "round " << round;
  }
}

// The same on the sending side: a plain sender and a select's send case wait on one full lane
// (two handles that share it); one slot frees, the select may be woken and take the other
// channel's value instead, and the plain sender must still get the slot.
TEST(LanesChannel, AWakeLeftBySelectReachesABlockedSender) {
  int const rounds = 200 / scale;
  for (int round = 0; round < rounds; ++round) {
    auto lanes_ch = spindle::bounded_lanes<int>(1, 2);
    auto other = spindle::bounded<int>(1);
    auto plain_tx = std::move(lanes_ch.first);  // lane 0
    auto lane1 = plain_tx;                      // lane 1, left empty
    auto select_tx = plain_tx;                  // lane 0 again
    auto rx = std::move(lanes_ch.second);
    ASSERT_TRUE(plain_tx.try_send(1));  // lane 0 full
    std::atomic<bool> plain_sent{false};
    std::atomic<bool> select_sent{false};
    std::jthread plain([&plain_sent, &plain_tx] {
      EXPECT_TRUE(plain_tx.send(2));
      plain_sent.store(true);
    });
    std::jthread selecting([&select_sent, &select_tx, other_rx = other.second]() mutable {
      int v = 3;
      spindle::select(
          spindle::on_send(select_tx, v,
                           [&](spindle::send_result<int> r) { select_sent.store(r.is_sent()); }),
          spindle::on_recv(other_rx, [](std::optional<int>) {}),
          spindle::on_timeout(limit, [] { ADD_FAILURE() << "the select was never woken"; }));
    });
    close_at_exit<int> unblock(rx);
    if (round % 3 != 0) {
      std::this_thread::sleep_for(1ms);  // most likely both wait by now
    }
    if (round % 4 < 2) {
      ASSERT_TRUE(other.first.send(1));
      ASSERT_EQ(rx.recv_for(limit).value, 1);
    } else {
      ASSERT_EQ(rx.recv_for(limit).value, 1);
      ASSERT_TRUE(other.first.send(1));
    }
    selecting.join();
    if (select_sent.load()) {
      ASSERT_EQ(rx.recv_for(limit).value, 3);  // room for the plain sender
    }
    EXPECT_TRUE(eventually([&] { return plain_sent.load(); }))
        << "round " << round << ": the blocked sender was not woken";
    rx.close();  // lets a stuck sender return, so that the thread can be joined
    plain.join();
  }
}

// A send case on a closed channel is ready at once and completes with `closed`, the value
// handed back, whichever lane its handle has (one first handed out after the close too).
TEST(LanesChannel, SelectSendOnAClosedChannelHandsTheValueBack) {
  no_leak check;
  auto ch = spindle::bounded_lanes<tracked>(1, 3);
  auto& tx = ch.first;
  ASSERT_TRUE(tx.try_send(tracked(1)));
  ch.second.close();
  auto late = tx;  // lane 1: no handle had it before the close
  for (auto* h : {&tx, &late}) {
    tracked v(7);
    spindle::send_status status = spindle::send_status::full;
    std::optional<tracked> back;
    EXPECT_EQ(spindle::select(spindle::on_send(*h, v,
                                               [&](spindle::send_result<tracked> r) {
                                                 status = r.status;
                                                 back = std::move(r.value);
                                               }),
                              spindle::on_timeout(limit, [] { ADD_FAILURE() << "not ready"; })),
              0U);
    EXPECT_EQ(status, send_status::closed);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->id(), 7U);
  }
  EXPECT_EQ(ch.second.recv()->id(), 1U);
  EXPECT_EQ(ch.second.recv(), std::nullopt);
}

// ---- Coroutines ----------------------------------------------------------------------------

// async_send waits for its handle's lane only, as send does.
TEST(LanesChannel, AsyncSendWaitsForItsOwnLaneOnly) {
  no_leak check;
  auto ch = spindle::bounded_lanes<tracked>(1, 2);
  auto& a = ch.first;
  auto& rx = ch.second;
  auto b = a;
  ASSERT_TRUE(spindle::sync_wait(await_one(a.async_send(tracked(1)))));
  auto r = spindle::sync_wait(await_one(a.async_send_for(tracked(2), 20ms)));
  EXPECT_TRUE(r.is_timed_out());
  ASSERT_TRUE(r.value.has_value());
  EXPECT_EQ(r.value->id(), 2U);
  EXPECT_TRUE(spindle::sync_wait(await_one(b.async_send(tracked(3))))) << "lane 1 has room";
  std::thread taker([rx = rx]() mutable {
    std::this_thread::sleep_for(20ms);
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(rx.recv().has_value());
    }
  });
  EXPECT_TRUE(spindle::sync_wait(await_one(a.async_send(tracked(4)))));
  taker.join();
  auto rr = spindle::sync_wait(await_one(rx.async_recv_for(0ms)));
  EXPECT_TRUE(rr.is_timed_out()) << "every value was taken";
}

// A coroutine suspended in async_recv is resumed by a send through a handle copied after it
// suspended, into a lane that had no handle before.
TEST(LanesChannel, AsyncRecvIsResumedBySendThroughALaterCopy) {
  no_leak check;
  auto ch = spindle::bounded_lanes<tracked>(1, 3);
  auto& tx = ch.first;
  auto& rx = ch.second;
  std::thread late([&tx] {
    std::this_thread::sleep_for(20ms);
    auto b = tx;  // lane 1
    auto c = b;   // lane 2
    EXPECT_TRUE(c.send(tracked(5)));
  });
  auto r = spindle::sync_wait(await_one(rx.async_recv_for(limit)));
  late.join();
  EXPECT_TRUE(r.is_received());
  ASSERT_TRUE(r.value.has_value());
  EXPECT_EQ(r.value->id(), 5U);
}

// ---- Values --------------------------------------------------------------------------------

TEST(LanesChannel, CarriesMoveOnlyTypes) {
  auto [tx, rx] = spindle::bounded_lanes<std::unique_ptr<int>>(2, 2);
  auto b = tx;
  ASSERT_TRUE(tx.send(std::make_unique<int>(1)));
  ASSERT_TRUE(tx.try_send(std::make_unique<int>(2)));
  ASSERT_TRUE(b.send(std::make_unique<int>(3)));
  auto full = tx.try_send(std::make_unique<int>(4));
  ASSERT_EQ(full.status, send_status::full);
  EXPECT_EQ(**full.value, 4);
  std::vector<int> got;
  b.close();
  for (auto v : rx) {  // move-only values taken by value
    got.push_back(*v);
  }
  ASSERT_EQ(got.size(), 3U);
  // Lane 0's values in their order, wherever lane 1's falls.
  got.erase(std::remove(got.begin(), got.end(), 3), got.end());
  EXPECT_EQ(got, (std::vector<int>{1, 2}));
}

}  // namespace
