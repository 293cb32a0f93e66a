// spindle::bounded_spsc under the model checker (detail/channel/spsc_channel.hpp): the ring
// wrapping around at capacity 1 and 2, a sender blocked on a full channel and a receiver
// blocked on an empty one, close racing with send and recv (from a third thread and from the
// receiver), the receiver dropped while a send runs, select over the spsc handles, and the
// switch to symmetric fences racing sends.
//
// What is checked: every value is received or handed back exactly once, in order; a receive
// that reports closed has seen every value (a try_recv after it reports closed too, and still
// does once the sender is done); the receiver sees what the sender wrote before send (the race
// detector checks the payloads and the slots); and at every quiescent point nobody waits for a
// wake the channel owes it (spsc_channel::lost_wake_up()). Blocking is an asymmetric Dekker
// pair (a heavy fence on the side about to sleep, a compiler barrier on the side that
// publishes) until waits come often enough to switch the channel to a full fence on both
// sides (after two heavy fences under the model checker). The model's heavy fence drains every
// store buffer and its light fence does nothing, so the explorations with store buffers
// (x86-TSO) are the ones that see a missing fence, as a lost wake-up.
//
// The handles are one per side and may be used by one thread at a time: each is used either by
// the body or by the one thread it is lent to, and the spawn and the join order those uses.
// A third party closes through the channel state, which is what either handle's close() calls.
#include <spindle/channel.hpp>
#include <spindle/model/track_allocations.hpp>
#include <spindle/select.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/support.hpp"
#include "support/model_cases.hpp"
#include "support/tracked.hpp"

namespace model = spindle::model;
using spindle::recv_status;
using spindle::send_result;
using spindle::send_status;
using spindle_test::budget;
using spindle_test::explore_and_report;
using spindle_test::tso;
using ledger = spindle_test::payload_ledger;

namespace {

/// The channel's no-lost-wake-up invariant (spsc_channel::lost_wake_up()), for a
/// model::quiescence_invariant. The channel must outlive the invariant: declare the invariant
/// after the handle that keeps the channel alive.
template <class T>
auto wake_owed(spindle::basic_receiver<T> const& rx) {
  auto* state = &spindle::detail::channel_access::state_of(rx);
  return [state] { return state->lost_wake_up(); };
}

/// Inside an execution: `got` is 0, 1, ... k - 1 and `back` is k, ..., n - 1 for some k: one
/// sender's blocking sends are received in order until the close, and every send after the
/// first one that failed fails too.
void expect_prefix_and_rest(std::vector<int> const& got, std::vector<int> const& back, int n) {
  model::check(static_cast<int>(got.size() + back.size()) == n,
               "a value was lost or delivered twice");
  int expected = 0;
  for (int v : got) {
    model::check(v == expected++, "values were received out of order");
  }
  for (int v : back) {
    model::check(v == expected++, "a send failed before one that succeeded");
  }
}

/// Inside an execution: the channel is closed and drained, for good.
template <class T>
void expect_closed_and_drained(spindle::basic_receiver<T>& rx, char const* what) {
  model::check(rx.try_recv().status == recv_status::closed, what);
}

/// The sender (a thread) sends 0 .. n - 1 with blocking send; the body receives them with recv.
/// With `prefill`, the body first fills the channel, so the sender's first send finds it full
/// and waits for the receiver. The sender then drops its handle: the receiver sees closed.
void blocking_pair(std::size_t capacity, int n, bool prefill) {
  auto ch = spindle::bounded_spsc<int>(capacity);
  auto& rx = ch.second;
  model::quiescence_invariant owed(wake_owed(rx));
  ledger l;
  int first = 0;
  if (prefill) {
    for (; first < static_cast<int>(capacity); ++first) {
      model::check(ch.first.try_send(l.make(first)).is_sent(), "the channel has room");
    }
  }
  model::thread producer([&l, &ch, first, n] {
    auto tx = std::move(ch.first);
    for (int i = first; i < n; ++i) {
      auto r = tx.send(l.make(i));
      model::check(r.is_sent(), "send failed on an open channel");
    }
  });
  std::vector<int> got;
  for (int i = 0; i < n; ++i) {
    auto v = rx.recv();
    model::check(v.has_value(), "recv reported closed on an open channel");
    l.take(got, *v);
    model::check(*v == i, "values arrived out of order");
  }
  producer.join();
  expect_closed_and_drained(rx, "the sender is gone and every value was received");
}

/// The receiver (a thread) receives 0 .. n - 1 with blocking recv, starting on an empty
/// channel, while the body sends them; the body keeps its handle, so nothing closes.
void receiver_blocked_on_empty(std::size_t capacity, int n) {
  auto ch = spindle::bounded_spsc<int>(capacity);
  auto& tx = ch.first;
  auto& rx = ch.second;
  model::quiescence_invariant owed(wake_owed(rx));
  ledger l;
  std::vector<int> got;
  model::thread consumer([&] {
    for (int i = 0; i < n; ++i) {
      auto v = rx.recv();
      model::check(v.has_value(), "recv reported closed on an open channel");
      l.take(got, *v);
      model::check(*v == i, "values arrived out of order");
    }
  });
  for (int i = 0; i < n; ++i) {
    model::check(tx.send(l.make(i)).is_sent(), "send failed on an open channel");
  }
  consumer.join();
  model::check(rx.try_recv().is_empty(), "every value was received once");
}

/// Who closes the channel while the sender sends 0 .. n - 1 and the receiver receives.
enum class closer : std::uint8_t {
  /// A third thread, through the channel state.
  third_thread,
  /// The receiver, after its first value, before it drains the rest.
  receiver,
};

/// The sender (a thread) sends 0 .. n - 1 with blocking send while the channel is closed; the
/// body receives until recv reports closed. Every value is received or handed back with
/// `closed`, exactly once, received ones in order; once recv reported closed, nothing appears
/// any more (try_recv reports closed, also after the sender is done; the sender keeps its
/// handle, so its drop does not close the channel a second time).
void close_racing_with_send_and_recv(std::size_t capacity, int n, closer who) {
  auto ch = spindle::bounded_spsc<int>(capacity);
  auto& tx = ch.first;
  auto& rx = ch.second;
  auto& state = spindle::detail::channel_access::state_of(rx);
  model::quiescence_invariant owed(wake_owed(rx));
  ledger l;
  std::vector<int> back;
  model::thread producer([&] {
    for (int i = 0; i < n; ++i) {
      auto r = tx.send(l.make(i));
      if (!r.is_sent()) {
        model::check(r.is_closed() && r.value.has_value() && *r.value == i,
                     "a send that failed must report closed and hand its value back");
        back.push_back(*r.value);
      }
    }
  });
  std::optional<model::thread> third;
  if (who == closer::third_thread) {
    third.emplace([&state] { state.close(); });
  }
  std::vector<int> got;
  if (who == closer::receiver) {
    if (auto v = rx.recv()) {
      l.take(got, *v);
    }
    rx.close();
  }
  while (auto v = rx.recv()) {
    l.take(got, *v);
  }
  expect_closed_and_drained(rx, "recv reported closed, then the channel was not");
  producer.join();
  if (third) {
    third->join();
  }
  expect_closed_and_drained(rx, "a value appeared after recv reported closed and drained");
  expect_prefix_and_rest(got, back, n);
}

/// The body sends tracked values 0 .. n - 1 with blocking send while the receiver (a thread)
/// takes at most one and drops the last receiving handle, which discards what is buffered.
/// Every value is destroyed exactly once (tracked aborts on a second destruction; the count
/// catches a leak), and sends after the drop report closed and hand their value back.
void receiver_dropped_while_sending(std::size_t capacity, int n) {
  using spindle_test::tracked;
  auto const before = tracked::live();
  {
    auto ch = spindle::bounded_spsc<tracked>(capacity);
    auto& tx = ch.first;
    model::quiescence_invariant owed(wake_owed(ch.second));
    std::optional<std::uint64_t> taken;
    model::thread consumer([&ch, &taken] {
      auto rx = std::move(ch.second);
      if (auto r = rx.try_recv(); r.is_received()) {
        taken = r.value->id();
      }
    });
    bool closed = false;
    for (int i = 0; i < n; ++i) {
      auto const id = static_cast<std::uint64_t>(i);
      auto r = tx.send(tracked(id));
      if (r.is_sent()) {
        model::check(!closed, "a send succeeded after one reported closed");
      } else {
        model::check(r.is_closed() && r.value.has_value() && r.value->id() == id,
                     "a send that failed must report closed and hand its value back");
        closed = true;
      }
    }
    consumer.join();
    model::check(!taken || *taken == 0, "the receiver took a value that was not first");
    model::check(tx.is_closed(), "the last receiver is gone: the channel is closed");
  }
  model::check(tracked::live() == before, "a value leaked or was destroyed twice");
}

/// Two spsc channels: A's sender (a thread) sends 0, 1, 2; B's sender (the body's) sends
/// nothing. The body takes the three values with selects over both receivers: each select
/// completes A's case exactly once, and B stays untouched.
void select_recv_over_two(std::size_t capacity) {
  auto a = spindle::bounded_spsc<int>(capacity);
  auto b = spindle::bounded_spsc<int>(capacity);
  model::quiescence_invariant owed_a(wake_owed(a.second));
  model::quiescence_invariant owed_b(wake_owed(b.second));
  ledger l;
  model::thread sender([&l, &a] {
    for (int i = 0; i < 3; ++i) {
      model::check(a.first.send(l.make(i)).is_sent(), "send on an open channel failed");
    }
  });
  std::vector<int> got;
  for (int round = 0; round < 3; ++round) {
    int completed = 0;
    auto const i =
        spindle::select(spindle::on_recv(a.second,
                                         [&](std::optional<int> v) {
                                           model::check(v.has_value(), "A is open");
                                           l.take(got, *v);
                                           ++completed;
                                         }),
                        spindle::on_recv(b.second, [](std::optional<int> /*v*/) {
                          model::check(false, "B is empty and open: its case cannot win");
                        }));
    model::check(i == 0 && completed == 1, "a select must complete exactly A's case");
  }
  sender.join();
  model::check(got == std::vector<int>{0, 1, 2}, "A's values arrived once, in order");
  model::check(b.second.try_recv().is_empty(), "B stays empty");
}

/// Two full spsc channels of capacity 1: A's receiver (a thread) takes three values, B's nobody.
/// The body sends 1 and 2 into A, each with a select over a send to A and a send to B: only A's
/// case can complete, once the receiver made room, and B's value stays untouched.
void select_send_on_full() {
  auto a = spindle::bounded_spsc<int>(1);
  auto b = spindle::bounded_spsc<int>(1);
  model::quiescence_invariant owed_a(wake_owed(a.second));
  model::quiescence_invariant owed_b(wake_owed(b.second));
  ledger l;
  model::check(a.first.try_send(l.make(0)).is_sent(), "prefill A");
  model::check(b.first.try_send(l.make(9)).is_sent(), "prefill B");
  std::vector<int> got;
  model::thread receiver([&l, &a, &got] {
    for (int i = 0; i < 3; ++i) {
      auto v = a.second.recv();
      model::check(v.has_value(), "recv reported closed on an open channel");
      l.take(got, *v);
    }
  });
  for (int k = 1; k <= 2; ++k) {
    int to_a = l.make(k);
    int to_b = 10 + k;
    int sent = 0;
    auto const i = spindle::select(spindle::on_send(a.first, to_a,
                                                    [&sent](send_result<int> r) {
                                                      model::check(r.is_sent(), "A is open");
                                                      ++sent;
                                                    }),
                                   spindle::on_send(b.first, to_b, [](send_result<int> /*r*/) {
                                     model::check(false, "B stays full: its case cannot win");
                                   }));
    model::check(i == 0 && sent == 1, "exactly A's case completes");
    model::check(to_b == 10 + k, "the case not chosen leaves its value untouched");
  }
  receiver.join();
  model::check(got == std::vector<int>{0, 1, 2}, "A's values arrived once, in order");
  auto rest = b.second.try_recv();
  model::check(rest.is_received() && *rest.value == 9 && b.second.try_recv().is_empty(),
               "B holds its prefilled value only");
}

/// Executions of each strategy of explore_each_way; 0 leaves that strategy out.
struct budgets {
  std::uint64_t dfs = 1000;
  std::uint64_t dfs_tso = 1000;
  std::uint64_t pct = 200;
  std::uint64_t random_tso = 300;
};

/// Explores `body` four ways, one line of statistics each: depth first over the schedules
/// within one preemption (dfs), the same with store buffers (x86-TSO: a store that reaches
/// memory late costs a preemption, so the unpreempted runs keep stores buffered for long),
/// PCT with depth 3, and random schedules with store buffers.
void explore_each_way(std::string const& name, std::uint64_t seed,
                      std::function<void()> const& body, budgets b = {}) {
  if (b.dfs != 0) {
    explore_and_report((name + ", dfs bound 1").c_str(), model::exhaustive(1, budget(b.dfs)), body);
  }
  if (b.dfs_tso != 0) {
    spindle_test::explore_tso_then_weak((name + ", dfs bound 1 + store buffers").c_str(),
                                        model::exhaustive(1, budget(b.dfs_tso)), body);
  }
  if (b.pct != 0) {
    explore_and_report((name + ", pct d=3").c_str(), model::pct_schedules(seed, budget(b.pct), 3),
                       body);
  }
  if (b.random_tso != 0) {
    spindle_test::explore_tso_then_weak((name + ", random + store buffers").c_str(),
                                        model::random_schedules(seed + 1, budget(b.random_tso)),
                                        body);
  }
}

/// Where both switch scenarios below start: a bounded_spsc(2) whose receiver has waited once,
/// alone (a recv_for that timed out), so that the heavy fence of its next wait is the second in a
/// row and switches the channel; the no-lost-wake-up invariant and the ledger of values.
struct switch_setup {
  decltype(spindle::bounded_spsc<int>(2)) ch = spindle::bounded_spsc<int>(2);
  model::quiescence_invariant owed{wake_owed(ch.second)};
  ledger l;

  switch_setup() {
    model::check(ch.second.recv_for(std::chrono::hours(1)).status == recv_status::timed_out,
                 "recv_for on an empty channel with no sender running did not time out");
  }
};

/// The switch to symmetric fences racing a publication (spsc_channel.hpp, "When waits are
/// frequent"). What the checker assumes of the asymmetric pair: heavy_fence() (membarrier(2))
/// drains every thread's store buffer at the instant it runs, and light_fence() is nothing, so
/// a publisher's buffered store becomes visible at a heavy fence and not before (it may also
/// reach memory on its own, a scheduler choice). The receiver's first wait happens alone (a
/// recv_for that times out), so its next wait's heavy fence is the second in a row and
/// switches the channel. In the race that only the switcher's own heavy fence covers: the
/// sender's first send wakes the registered receiver; its second stores tail_ (buffered), reads
/// the mode still asymmetric and finds nobody registered; the switcher stores symmetric, its
/// re-check finds the first value, and its next wait, fenced symmetrically, misses the second
/// value still in the sender's buffer unless the switch's heavy fence flushed it. Here that
/// window needs about three preemptions, more than these explorations reach;
/// publication_inside_the_switch() below reaches it with one. What this scenario checks is
/// every other interleaving of the switch with two sends.
void switch_racing_publication() {
  switch_setup s;
  auto& tx = s.ch.first;
  auto& rx = s.ch.second;
  auto& l = s.l;
  std::vector<int> got;
  model::thread consumer([&] {
    for (int i = 0; i < 2; ++i) {
      auto v = rx.recv();
      model::check(v.has_value(), "recv reported closed on an open channel");
      l.take(got, *v);
      model::check(*v == i, "values arrived out of order");
    }
  });
  for (int i = 0; i < 2; ++i) {
    model::check(tx.send(l.make(i)).is_sent(), "send failed on an open channel");
  }
  consumer.join();
}

/// The window of switch_racing_publication() that only the switcher's own heavy fence covers,
/// within one preemption. The body is the receiver: its recv_for that times out is the first heavy
/// fence in a row, so the heavy fence of its next wait switches the channel. The sender (a thread)
/// yields before its two sends and after them. To the checker a thread that yields cannot run again
/// until something is written, so a yield hands the receiver the processor without a preemption:
/// those before the sends let it run into its wait, the one after them lets it go on once both
/// sends are done, while the second send's store of tail_ stays in the sender's store buffer
/// (nothing drains it before the sender leaves). The sender yields twice before its sends because a
/// store reaching memory counts as a write: with SPINDLE_ENABLE_ASSERTS the receiver's busy mark
/// (exclusive_use) is still buffered at the sender's first yield, and its flush lets the sender on
/// again. The one preemption is the receiver's, between its heavy fence and its move to
/// `switching`: meanwhile the first send wakes it and the second stores tail_, reads `asymmetric`
/// and finds nobody registered. The receiver then stores symmetric and takes the first value; its
/// next wait, fenced symmetrically, re-checks tail_ and sleeps unless the switch's heavy fence
/// flushed the second store, and the sender leaves without waking it: a lost wake-up.
void publication_inside_the_switch() {
  switch_setup s;
  auto& tx = s.ch.first;
  auto& rx = s.ch.second;
  auto& l = s.l;
  model::thread producer([&l, &tx] {
    model::thread_yield();
    model::thread_yield();
    for (int i = 0; i < 2; ++i) {
      model::check(tx.send(l.make(i)).is_sent(), "send failed on an open channel");
    }
    model::thread_yield();
  });
  std::vector<int> got;
  for (int i = 0; i < 2; ++i) {
    auto v = rx.recv();
    model::check(v.has_value(), "recv reported closed on an open channel");
    l.take(got, *v);
    model::check(*v == i, "values arrived out of order");
  }
  producer.join();
}

/// "bounded_spsc(<capacity>)", the start of a line of statistics.
auto spsc_name(std::size_t capacity) -> std::string {
  return "bounded_spsc(" + std::to_string(capacity) + ")";
}

}  // namespace

TEST(ModelChannelSpsc, Example) {
  // Capacity 1, three values: every send after the first wraps around the two-slot ring and
  // may block; every schedule within one preemption delivers all three, in order, once.
  auto const r = model::explore(model::exhaustive(1, budget(20000)),
                                [] { blocking_pair(1, 3, /*prefill=*/false); });
  EXPECT_TRUE(r) << r.message;
  spindle_test::print_stats("bounded_spsc(1) send/recv x3, dfs bound 1", r);
}

TEST(ModelChannelSpsc, BlockingPairCapacityOneAndTwo) {
  // Five values wrap around the ring (two and three slots) at least once.
  for (std::size_t cap : {std::size_t{1}, std::size_t{2}}) {
    explore_each_way(spsc_name(cap) + " send/recv x5", 200 + cap,
                     [cap] { blocking_pair(cap, 5, /*prefill=*/false); }, {.dfs = 0});
  }
}

TEST(ModelChannelSpsc, SenderBlockedOnFullWokenByReceiver) {
  // The body fills the channel before the sender starts, so its first send waits for room:
  // the receiver's light fence after freeing a slot against the sender's heavy fence between
  // registering and re-checking.
  for (std::size_t cap : {std::size_t{1}, std::size_t{2}}) {
    explore_each_way(spsc_name(cap) + " sender on full", 210 + cap,
                     [cap] { blocking_pair(cap, static_cast<int>(cap) + 2, /*prefill=*/true); },
                     {.dfs_tso = 1500});
  }
}

TEST(ModelChannelSpsc, ReceiverBlockedOnEmptyWokenBySender) {
  // The receiver starts on an empty channel: the sender's light fence after publishing against
  // the receiver's heavy fence between registering and re-checking.
  for (std::size_t cap : {std::size_t{1}, std::size_t{2}}) {
    explore_each_way(spsc_name(cap) + " receiver on empty", 220 + cap,
                     [cap] { receiver_blocked_on_empty(cap, 3); }, {.dfs_tso = 1500});
  }
}

TEST(ModelChannelSpsc, CloseFromAThirdThreadRacingWithSendAndRecv) {
  for (std::size_t cap : {std::size_t{1}, std::size_t{2}}) {
    explore_each_way(spsc_name(cap) + " close (third thread) vs send/recv", 230 + cap,
                     [cap] { close_racing_with_send_and_recv(cap, 3, closer::third_thread); });
  }
}

TEST(ModelChannelSpsc, CloseByTheReceiverRacingWithSend) {
  for (std::size_t cap : {std::size_t{1}, std::size_t{2}}) {
    explore_each_way(spsc_name(cap) + " close (receiver) vs send", 240 + cap,
                     [cap] { close_racing_with_send_and_recv(cap, 3, closer::receiver); },
                     {.dfs_tso = 1500});
  }
}

TEST(ModelChannelSpsc, DroppingTheReceiverRacingWithSend) {
  for (std::size_t cap : {std::size_t{1}, std::size_t{2}}) {
    explore_each_way(spsc_name(cap) + " receiver dropped vs send, tracked", 250 + cap,
                     [cap] { receiver_dropped_while_sending(cap, 3); });
  }
}

TEST(ModelChannelSpsc, SelectRecvOverSpscReceivers) {
  for (std::size_t cap : {std::size_t{1}, std::size_t{2}}) {
    explore_each_way("select recv over two " + spsc_name(cap), 260 + cap,
                     [cap] { select_recv_over_two(cap); });
  }
}

TEST(ModelChannelSpsc, SelectSendOnFullSpsc) {
  explore_each_way("select send on two full bounded_spsc(1)", 270, [] { select_send_on_full(); },
                   {.dfs = 1500});
}

TEST(ModelChannelSpsc, SwitchToSymmetricFencesFlushesAPublisherThatReadAsymmetric) {
  // Every schedule within one preemption with store buffers: about 830 executions, among them
  // the window of publication_inside_the_switch(); a switch without its heavy fence loses the
  // second value within the first 320. With SPINDLE_ENABLE_ASSERTS the busy marks add stores
  // and choice points: the whole bound takes about 69,000 executions, the window comes after
  // about 3,300, and the budget stops at 10,000.
  spindle_test::explore_tso_then_weak(
      "bounded_spsc(2) send inside the fence switch, dfs bound 1 + store buffers",
      model::exhaustive(1, budget(10000)), [] { publication_inside_the_switch(); });
  explore_each_way("bounded_spsc(2) fence switch vs send", 280, [] { switch_racing_publication(); },
                   {.dfs = 0, .dfs_tso = 3000, .pct = 0, .random_tso = 1000});
}
