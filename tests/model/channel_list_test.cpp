// The unbounded channel's block ends under the model checker (detail/channel/list_channel.hpp): two
// receivers take the last two slots of a block at once, so the receiver of the last slot
// starts the block's cooperative destruction while the other may still be reading its slot.
// A block recycled one slot early (the destroyer skipping the second-to-last slot, or the
// READ/DESTROY hand-over counting one slot short) resets that slot under its reader, which then
// waits for ever for a value that was already there (a livelock the checker reports), or
// reads a slot a later send rewrites (a data race on the payload). Before this test only a
// stress test caught such a bug, by hanging most of the time.
#include <spindle/channel.hpp>
#include <spindle/model/track_allocations.hpp>

#include <gtest/gtest.h>

#include <vector>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle::send_status;
using spindle_test::budget;
using spindle_test::expect_each_of_once;
using spindle_test::explore_and_report;
using spindle_test::tso;
using ledger = spindle_test::payload_ledger;

namespace {

/// Slots per block of the unbounded channel (list_channel.hpp: lap 32, one position of which
/// marks the move to the next block).
constexpr int block_slots = 31;

void last_two_slots_body() {
  auto [tx, rx] = spindle::unbounded<int>();
  ledger l;
  std::vector<int> drained;
  // Alone (no choice points yet): move head and tail to the block's second-to-last slot.
  for (int i = 0; i < block_slots - 2; ++i) {
    auto s = tx.try_send(l.make(i));
    model::check(s.status == send_status::sent, "unbounded try_send must succeed");
    auto v = rx.try_recv();
    model::check(v && *v.value == i, "the single-threaded prefix lost a value");
    l.take(drained, *v.value);
  }
  // The block's last two slots (the second send installs the next block).
  for (int i = block_slots - 2; i < block_slots; ++i) {
    auto s = tx.try_send(l.make(i));
    model::check(s.status == send_status::sent, "unbounded try_send must succeed");
  }
  std::vector<int> got_a;
  std::vector<int> got_b;
  model::thread other([&l, &got_a, rx = rx]() mutable {
    auto v = rx.recv();
    model::check(v.has_value(), "recv reported closed on an open channel");
    l.take(got_a, *v);
  });
  auto v = rx.recv();
  model::check(v.has_value(), "recv reported closed on an open channel");
  l.take(got_b, *v);
  other.join();
  expect_each_of_once({got_a, got_b}, {block_slots - 2, block_slots - 1});
  // Send again, into the next block, and receive it: the channel still works.
  std::vector<int> after;
  for (int i = block_slots; i < block_slots + 2; ++i) {
    auto s = tx.try_send(l.make(i));
    model::check(s.status == send_status::sent, "unbounded try_send must succeed");
    auto w = rx.try_recv();
    model::check(w && *w.value == i, "a value sent after the block end was lost");
    l.take(after, *w.value);
  }
}

}  // namespace

TEST(ModelChannelList, TwoReceiversTakeTheLastTwoSlotsOfABlock) {
  explore_and_report("unbounded, last two slots, 2 receivers, dfs bound 2",
                     model::exhaustive(2, budget(20000)), last_two_slots_body);
  explore_and_report("unbounded, last two slots, 2 receivers, pct",
                     model::pct_schedules(121, budget(1000), 3), last_two_slots_body);
  explore_and_report("unbounded, last two slots, 2 receivers, random + buffers",
                     tso(model::random_schedules(122, budget(1000))), last_two_slots_body);
}
