// A receiver as a C++20 range: `for (auto v : rx)` and the standard range adaptors.
//
// The contract these tests state: the iterator receives lazily, when it is first compared with
// the end or dereferenced, never in begin() or operator++. So an adaptor that stops after a
// count (take, counted) stops without receiving an extra message, and every message the
// channel accepted is either handed to the user (the loop body, or a predicate) or still in
// the channel. Each test counts: messages sent == messages handed out + messages left.
// An adaptor whose predicate looks at a value (filter, take_while, drop_while) consumes that
// value, including the one it stops on: it was handed to the user's predicate. filter looks
// for its next match as soon as it is incremented, so `filter | take(n)` also consumes what
// its predicate saw after the n-th match.

#include <spindle/channel.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <future>
#include <iterator>
#include <memory>
#include <ranges>
#include <thread>
#include <utility>
#include <vector>

#include "support/range_adaptors.hpp"
#include "support/tracked.hpp"

// The tests that use the standard range adaptors need a compiler that builds them
// (support/range_adaptors.hpp); the tests on std::counted_iterator below, the mechanism of take
// and counted, run everywhere.

namespace {

using namespace std::chrono_literals;
using spindle_test::tracked;

using ids = std::vector<std::uint64_t>;

/// Sends ids first, first + 1, ..., first + count - 1.
void send_ids(spindle::sender<tracked>& tx, std::uint64_t first, std::uint64_t count) {
  for (std::uint64_t i = first; i < first + count; ++i) {
    ASSERT_TRUE(tx.try_send(tracked(i)));
  }
}

/// A channel holding ids 0 .. count - 1: unbounded, or bounded(capacity) for a capacity > 0.
auto holding(std::uint64_t count, std::size_t capacity = 0)
    -> std::pair<spindle::sender<tracked>, spindle::receiver<tracked>> {
  auto channel =
      capacity == 0 ? spindle::unbounded<tracked>() : spindle::bounded<tracked>(capacity);
  send_ids(channel.first, 0, count);
  return channel;
}

/// Receives what is buffered, without waiting, and returns the ids in order.
auto drain(spindle::receiver<tracked>& rx) -> ids {
  ids out;
  while (auto r = rx.try_recv()) {
    out.push_back(r.value->id());
  }
  return out;
}

auto iota_ids(std::uint64_t first, std::uint64_t count) -> ids {
  ids out;
  for (std::uint64_t i = first; i < first + count; ++i) {
    out.push_back(i);
  }
  return out;
}

/// Runs `body` on a thread and fails the test if it has not returned within a few seconds:
/// then it calls `unblock` (which closes the channel, so a blocked receive returns) and waits
/// for it. A regression that blocks fails here instead of hanging the test run.
template <class Body, class Unblock>
void finishes_in_time(Body body, Unblock unblock) {
  std::promise<void> done;
  auto finished = done.get_future();
  std::thread t([&] {
    body();
    done.set_value();
  });
  if (finished.wait_for(5s) != std::future_status::ready) {
    ADD_FAILURE() << "still blocked after 5 s";
    unblock();
  }
  t.join();
}

/// Checks, when it goes out of scope, that every tracked value made in the test is gone:
/// nothing leaked and (tracked aborts otherwise) nothing was destroyed twice.
class no_leaks {
 public:
  no_leaks() : start_(tracked::live()) {}
  no_leaks(no_leaks const&) = delete;
  auto operator=(no_leaks const&) -> no_leaks& = delete;
  ~no_leaks() { EXPECT_EQ(tracked::live(), start_); }

 private:
  std::int64_t start_;
};

#if SPINDLE_TEST_RANGE_ADAPTORS
// ---- Example --------------------------------------------------------------------------------

// take(n) receives exactly n messages; whatever else is buffered stays in the channel.
TEST(ChannelRange, Example) {
  auto [tx, rx] = spindle::bounded<int>(8);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(tx.send(i));
  }
  std::vector<int> first;
  for (int v : rx | std::views::take(3)) {
    first.push_back(v);
  }
  EXPECT_EQ(first, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(rx.recv(), 3);  // the fourth message was not touched by take(3)
}
#endif

// ---- The iterator's type --------------------------------------------------------------------

/// Movable and move-constructible, but with no assignment.
struct not_assignable {
  int v;
  explicit not_assignable(int x) noexcept : v(x) {}
  not_assignable(not_assignable&&) noexcept = default;
  auto operator=(not_assignable&&) -> not_assignable& = delete;
};

static_assert(std::ranges::input_range<spindle::receiver<int>>);
static_assert(std::ranges::input_range<spindle::receiver<tracked>>);  // move-only
static_assert(std::ranges::input_range<spindle::receiver<std::unique_ptr<int>>>);
static_assert(std::ranges::input_range<spindle::receiver<not_assignable>>);
// Not sized: size() is a snapshot, and take(n) must ask the iterator, not count alone.
static_assert(!std::ranges::sized_range<spindle::receiver<int>>);
// Move-only: a copy of an iterator that holds a received value would duplicate the message.
static_assert(std::movable<spindle::receiver<int>::iterator>);
static_assert(!std::copy_constructible<spindle::receiver<int>::iterator>);
static_assert(std::movable<spindle::receiver<not_assignable>::iterator>);

// ---- begin() and operator++ do not receive --------------------------------------------------

TEST(ChannelRange, BeginDoesNotReceive) {
  no_leaks check;
  auto [tx, rx] = holding(2);
  {
    auto it = rx.begin();  // an iterator that was never looked at holds nothing
  }
  EXPECT_EQ(rx.size(), 2U);
  EXPECT_EQ(drain(rx), iota_ids(0, 2));
}

TEST(ChannelRange, IncrementDiscardsOnlyTheValueAlreadyLookedAt) {
  no_leaks check;
  auto [tx, rx] = holding(3);
  auto it = rx.begin();
  ASSERT_NE(it, std::default_sentinel);  // receives message 0
  ++it;                                  // destroys message 0; receives nothing
  EXPECT_EQ(rx.size(), 2U);
  tracked v = *it;  // receives message 1
  EXPECT_EQ(v.id(), 1U);
  EXPECT_EQ(drain(rx), iota_ids(2, 1));
}

TEST(ChannelRange, MovingAnIteratorMovesTheValueItHolds) {
  no_leaks check;
  auto [tx, rx] = holding(2);
  auto it = rx.begin();
  ASSERT_NE(it, std::default_sentinel);  // holds message 0
  auto other = rx.begin();
  other = std::move(it);  // move assignment, even for a T that cannot be assigned
  tracked v = *other;
  EXPECT_EQ(v.id(), 0U);
  EXPECT_EQ(drain(rx), iota_ids(1, 1));
}

TEST(ChannelRange, BreakingOutOfARangeForLeavesTheRestInTheChannel) {
  no_leaks check;
  auto [tx, rx] = holding(5);
  ids got;
  for (auto v : rx) {
    got.push_back(v.id());
    if (got.size() == 2) {
      break;
    }
  }
  EXPECT_EQ(got, iota_ids(0, 2));
  EXPECT_EQ(drain(rx), iota_ids(2, 3));
}

// take(n) and views::counted are a std::counted_iterator over the receiver's iterator, ended
// as [range.take.sentinel] says: count() == 0 || base() == end. Written out here, the last
// ++ reaches the receiver's iterator after message 2 was looked at; it must not receive
// message 3, and the loop must end without waiting for a message that may never come.
TEST(ChannelRange, CountedIteratorStopsWithoutReceivingMore) {
  no_leaks check;
  auto [tx, rx] = holding(3, 3);  // exactly three, and nobody closes
  ids got;
  finishes_in_time(
      [&got, &rx = rx] {
        for (std::counted_iterator it(rx.begin(), 3);
             it.count() != 0 && it.base() != std::default_sentinel; ++it) {
          got.push_back((*it).id());
        }
      },
      [&tx = tx] { tx.close(); });
  EXPECT_EQ(got, iota_ids(0, 3));
  ASSERT_TRUE(tx.try_send(tracked(3)));
  EXPECT_EQ(drain(rx), iota_ids(3, 1));
}

#if SPINDLE_TEST_RANGE_ADAPTORS

// ---- Adaptors that stop after a count lose nothing ------------------------------------------

TEST(ChannelRange, TakeLeavesTheRestInTheChannel) {
  no_leaks check;
  auto [tx, rx] = holding(5, 8);
  ids got;
  for (auto v : rx | std::views::take(3)) {
    got.push_back(v.id());
  }
  EXPECT_EQ(got, iota_ids(0, 3));
  auto next = rx.recv();  // message 3, not message 4
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->id(), 3U);
  EXPECT_EQ(drain(rx), iota_ids(4, 1));
}

// Exactly n buffered and nobody closes: take(n) must end after the n-th message, not wait for
// an (n+1)-th that will never come.
TEST(ChannelRange, TakeOfExactlyWhatIsBufferedDoesNotBlock) {
  no_leaks check;
  auto [tx, rx] = holding(3, 3);
  ids got;
  finishes_in_time(
      [&got, &rx = rx] {
        for (auto v : rx | std::views::take(3)) {
          got.push_back(v.id());
        }
      },
      [&tx = tx] { tx.close(); });
  EXPECT_EQ(got, iota_ids(0, 3));
  EXPECT_FALSE(tx.is_closed());
}

TEST(ChannelRange, TakeZeroReceivesNothing) {
  no_leaks check;
  auto [tx, rx] = holding(1);
  finishes_in_time(
      [&rx = rx] {
        for (auto v : rx | std::views::take(0)) {
          ADD_FAILURE() << "take(0) yielded message " << v.id();
        }
      },
      [&tx = tx] { tx.close(); });
  EXPECT_EQ(drain(rx), iota_ids(0, 1));
}

TEST(ChannelRange, TakingTwiceInARowGetsConsecutiveMessages) {
  no_leaks check;
  auto [tx, rx] = holding(6);
  ids got;
  finishes_in_time(
      [&got, &rx = rx] {
        for (int round = 0; round < 2; ++round) {
          for (auto v : rx | std::views::take(3)) {
            got.push_back(v.id());
          }
        }
      },
      [&tx = tx] { tx.close(); });
  EXPECT_EQ(got, iota_ids(0, 6));
  EXPECT_EQ(rx.size(), 0U);
}

TEST(ChannelRange, CountedTakesExactlyN) {
  no_leaks check;
  auto [tx, rx] = holding(5);
  ids got;
  for (auto v : std::views::counted(rx.begin(), 3)) {
    got.push_back(v.id());
  }
  EXPECT_EQ(got, iota_ids(0, 3));
  EXPECT_EQ(drain(rx), iota_ids(3, 2));
}

TEST(ChannelRange, TransformThenTakeLeavesTheRestInTheChannel) {
  no_leaks check;
  auto [tx, rx] = holding(4);
  auto to_id = [](tracked&& t) { return t.id(); };
  ids got;
  for (auto id : rx | std::views::transform(to_id) | std::views::take(2)) {
    got.push_back(id);
  }
  EXPECT_EQ(got, iota_ids(0, 2));
  EXPECT_EQ(drain(rx), iota_ids(2, 2));
}

TEST(ChannelRange, TakeOverAClosedChannelEndsAtTheClose) {
  no_leaks check;
  auto [tx, rx] = holding(2, 4);
  tx.close();
  ids got;
  finishes_in_time(
      [&got, &rx = rx] {
        for (auto v : rx | std::views::take(5)) {
          got.push_back(v.id());
        }
      },
      [] {});
  EXPECT_EQ(got, iota_ids(0, 2));
  EXPECT_EQ(rx.try_recv().status, spindle::recv_status::closed);
}

// ---- Adaptors with a predicate consume what the predicate saw -------------------------------

// take_while hands message 2 to its predicate, which says stop: message 2 is consumed (it was
// handed to user code) and nothing after it is received.
TEST(ChannelRange, TakeWhileConsumesExactlyTheElementItStopsOn) {
  no_leaks check;
  auto [tx, rx] = holding(6);
  ids seen_by_predicate;
  auto below_two = [&](tracked const& t) {
    seen_by_predicate.push_back(t.id());
    return t.id() < 2;
  };
  ids got;
  for (auto v : rx | std::views::take_while(below_two)) {
    got.push_back(v.id());
  }
  EXPECT_EQ(got, iota_ids(0, 2));
  EXPECT_EQ(seen_by_predicate, iota_ids(0, 3));
  EXPECT_EQ(drain(rx), iota_ids(3, 3));  // sent 6 == 2 yielded + 1 consumed + 3 left
}

// filter's operator++ looks for the next match at once. So when take(2) steps past message 2,
// the filter hands messages 3 and 4 to its predicate and stops at 4, which is consumed with
// the iterator: everything the predicate saw is gone, everything it did not see is left.
TEST(ChannelRange, FilterThenTakeConsumesWhatThePredicateSaw) {
  no_leaks check;
  auto [tx, rx] = holding(6);
  ids seen_by_predicate;
  auto even = [&](tracked const& t) {
    seen_by_predicate.push_back(t.id());
    return t.id() % 2 == 0;
  };
  ids got;
  for (auto v : rx | std::views::filter(even) | std::views::take(2)) {
    got.push_back(v.id());
  }
  EXPECT_EQ(got, (ids{0, 2}));
  EXPECT_EQ(seen_by_predicate, iota_ids(0, 5));
  EXPECT_EQ(drain(rx), iota_ids(5, 1));  // sent 6 == 5 seen by the predicate + 1 left
}

TEST(ChannelRange, DropWhileConsumesWhatItDrops) {
  no_leaks check;
  auto [tx, rx] = holding(5);
  tx.close();
  auto below_two = [](tracked const& t) { return t.id() < 2; };
  ids got;
  for (auto v : rx | std::views::drop_while(below_two)) {
    got.push_back(v.id());
  }
  EXPECT_EQ(got, iota_ids(2, 3));
}

// ---- Element types --------------------------------------------------------------------------

TEST(ChannelRange, IteratesValuesThatCannotBeAssigned) {
  auto [tx, rx] = spindle::bounded<not_assignable>(4);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(tx.send(not_assignable(i)));
  }
  std::vector<int> got;
  for (auto v : rx | std::views::take(2)) {
    got.push_back(v.v);
  }
  EXPECT_EQ(got, (std::vector<int>{0, 1}));
  EXPECT_EQ(rx.try_recv().value->v, 2);
}

// ---- Concurrency ----------------------------------------------------------------------------

// Two consumers take in batches of 3 while a producer sends; every message arrives exactly
// once, in order within each batch's receiver.
TEST(ChannelRange, BatchesFromConcurrentConsumersLoseNothing) {
  no_leaks check;
  constexpr std::uint64_t total = 3000;
  auto [tx, rx] = spindle::bounded<tracked>(16);
  std::vector<ids> per_consumer(2);
  std::vector<std::thread> consumers;
  for (auto& mine : per_consumer) {
    consumers.emplace_back([&mine, rx = rx]() mutable {
      for (;;) {
        std::size_t n = 0;
        for (auto v : rx | std::views::take(3)) {
          mine.push_back(v.id());
          ++n;
        }
        if (n < 3) {
          return;  // closed and drained
        }
      }
    });
  }
  { auto moved = std::move(rx); }  // the consumers hold the only receivers now
  for (std::uint64_t i = 0; i < total; ++i) {
    if (!tx.send(tracked(i))) {
      ADD_FAILURE() << "the consumers stopped early, at message " << i;
      break;
    }
  }
  tx.close();
  for (auto& t : consumers) {
    t.join();
  }
  std::vector<int> count(total, 0);
  for (auto const& mine : per_consumer) {
    for (auto id : mine) {
      ++count[id];
    }
  }
  for (std::uint64_t i = 0; i < total; ++i) {
    EXPECT_EQ(count[i], 1) << "message " << i;
  }
}

#endif  // SPINDLE_TEST_RANGE_ADAPTORS

}  // namespace
