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

#include <cstdint>
#include <string>
#include <utility>
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

/// Two receivers, a model thread and this one, take one value each with a blocking recv;
/// returns what each took.
auto two_receivers_take_one(spindle::receiver<int>& rx, ledger& l)
    -> std::pair<std::vector<int>, std::vector<int>> {
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
  return {std::move(got_a), std::move(got_b)};
}

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
  auto const [got_a, got_b] = two_receivers_take_one(rx, l);
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

/// Alone (no thread yet, so no choice point matters): sends and receives `n` values, moving both
/// positions `n` slots on. The values are not the ledger's (its indices stay small).
void advance_alone(spindle::sender<int>& tx, spindle::receiver<int>& rx, int n) {
  for (int i = 0; i < n; ++i) {
    auto s = tx.try_send(-1);
    model::check(s.status == send_status::sent, "unbounded try_send must succeed");
    auto v = rx.try_recv();
    model::check(v && *v.value == -1, "the single-threaded prefix lost a value");
  }
}

/// Receives what is left and checks it is `first`, `first` + 1, ... `end` - 1, in order.
void drain_in_order(spindle::receiver<int>& rx, ledger& l, int first, int end) {
  std::vector<int> rest;
  for (int i = first; i < end; ++i) {
    auto v = rx.try_recv();
    model::check(v && *v.value == i, "a value was lost or came out of order");
    l.take(rest, *v.value);
  }
  model::check(rx.try_recv().status == spindle::recv_status::empty, "a value came twice");
}

/// Two receivers cross a block boundary at once: one takes the block's last slot and moves
/// head_ to the next block (its block pointer, then its index), the other takes the next
/// block's first slot. A receiver that read the new index with the old block pointer would
/// take slot 0 of the old block: a value received twice, and the new block's first lost.
void receivers_cross_the_boundary_body() {
  auto [tx, rx] = spindle::unbounded<int>();
  ledger l;
  // Both positions at the block's last slot.
  advance_alone(tx, rx, block_slots - 1);
  int const first = 0;
  int next = first;
  // The block's last slot, and the next block's first two (the first send installs it).
  for (int i = 0; i < 3; ++i) {
    model::check(tx.try_send(l.make(next++)).status == send_status::sent,
                 "unbounded try_send must succeed");
  }
  auto const [got_a, got_b] = two_receivers_take_one(rx, l);
  expect_each_of_once({got_a, got_b}, {first, first + 1});
  drain_in_order(rx, l, first + 2, next);
}

/// A block recycled through the channel's one-block cache and reused: block 0 is drained alone
/// (its last reader recycles it), then a sender fills the second block's last slot, which takes
/// the cached block as the third, and sends into that block's first slot while a receiver
/// follows it there. The reused block must look new: its slots empty (no stale WRITE a
/// receiver would take before the send wrote), its link null; and what the sender writes is
/// visible to the receiver (race detector on the payload).
void recycled_block_body() {
  auto [tx, rx] = spindle::unbounded<int>();
  ledger l;
  // Block 0 drained and cached; both positions at block 1's last slot.
  advance_alone(tx, rx, 2 * block_slots - 1);
  int const first = 0;
  int next = first;
  std::vector<int> got;
  model::thread receiver([&l, &got, rx = rx]() mutable {
    for (int i = 0; i < 2; ++i) {
      auto v = rx.recv();
      model::check(v.has_value(), "recv reported closed on an open channel");
      l.take(got, *v);
    }
  });
  for (int i = 0; i < 2; ++i) {
    model::check(tx.try_send(l.make(next++)).status == send_status::sent,
                 "unbounded try_send must succeed");
  }
  receiver.join();
  expect_each_of_once({got}, {first, first + 1});
  model::check(got[0] == first, "values came out of order");
  // The channel still works past the reused block's first slots.
  advance_alone(tx, rx, 2);
}

/// Explores `body` three ways, a line of statistics each starting with `what`: depth first
/// within two preemptions, PCT with depth 3 (seed `seed`), and random schedules with store
/// buffers (seed `seed + 1`).
void explore_three_ways(std::string const& what, std::uint64_t seed, void (*body)()) {
  explore_and_report((what + ", dfs bound 2").c_str(), model::exhaustive(2, budget(20000)), body);
  explore_and_report((what + ", pct").c_str(), model::pct_schedules(seed, budget(1000), 3), body);
  spindle_test::explore_tso_then_weak((what + ", random + buffers").c_str(),
                                      model::random_schedules(seed + 1, budget(1000)), body);
}

}  // namespace

TEST(ModelChannelList, TwoReceiversTakeTheLastTwoSlotsOfABlock) {
  explore_three_ways("unbounded, last two slots, 2 receivers", 121, last_two_slots_body);
}

TEST(ModelChannelList, TwoReceiversCrossIntoTheNextBlock) {
  explore_three_ways("unbounded, 2 receivers cross a block end", 131,
                     receivers_cross_the_boundary_body);
}

TEST(ModelChannelList, ARecycledBlockIsReusedAsNew) {
  explore_three_ways("unbounded, recycled block reused", 141, recycled_block_body);
}
