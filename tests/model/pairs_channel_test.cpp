// The operation matrix of spindle's channels (tests/support/op_matrix.hpp): for each flavour,
// bounded (array_channel), unbounded (list_channel), rendezvous (zero_channel) and lanes
// (lanes_channel, two lanes: each operation's sender is a copy with a lane of its own), every
// unordered pair of the public operations below, each operation against itself included, runs
// under the model checker on two threads (three for some rendezvous pairs, see `plan`).
//
// What every pair proves, on every explored schedule:
//   - exactly once: every value made (prefilled, sent by an operation, offered by a helper
//     thread, or probed by finish()) is received once, handed back once (a send that ended
//     full, closed or timed out returns it untouched), or destroyed once by the channel when
//     the last receiver goes; none is lost or seen twice, and the live instance count
//     (tests/support/tracked.hpp) returns to where it was once every handle is gone;
//   - publication: whoever takes a value sees the payload written before it was sent (the
//     race detector checks payload_ledger's plain memory);
//   - results: a send reports closed, and a receive reports closed, only if the pair has an
//     operation that closes that side; a receive that reported closed left nothing buffered;
//     full comes only from try_send, empty only from try_recv, timed_out only from the timed
//     calls (see the note at the end);
//   - close: the channel ends closed exactly when the pair closed it (close(), or the last
//     sender or receiver dropped); after a close try_send reports closed and hands the value
//     back; an open buffered channel still carries a value afterwards;
//   - FIFO: the prefill leaves the channel before anything sent later, in its own order, and a
//     feeder's values in theirs, within each receiver and between an operation's receives and
//     the final drain (lanes: the prefill in its own order only, as it shares a lane with
//     nothing else for sure);
//   - no lost wake-up: the channel is prepared so that both operations can finish without a
//     third party, so a thread still blocked at the end is reported as a deadlock; and at
//     every quiescent point the channel's own invariant (lost_wake_up(): nobody waits for a
//     wake its state already owes) must hold, which also catches a timed waiter that missed
//     its wake.
#include <spindle/channel.hpp>
#include <spindle/model/track_allocations.hpp>

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "model/support.hpp"
#include "support/model_cases.hpp"
#include "support/op_matrix.hpp"
#include "support/tracked.hpp"

namespace model = spindle::model;
using spindle::recv_status;
using spindle::send_status;

namespace {

enum class flavour : std::uint8_t { bounded, unbounded, rendezvous, lanes };

/// The lanes flavour's lane count in the matrix: the prefill goes through the first handle
/// (lane 0), and the operations' copies of the sender take lanes 1 and 0 in turn, so that a
/// receiver waits for a value in a lane it is not looking at as often as in one it is.
constexpr std::size_t matrix_lanes = 2;

/// The rows and columns of the matrix. recv(stop_token), the _until calls and the coroutine
/// forms are not rows: see the note at the end of this file.
enum class op : std::uint8_t {
  send,          ///< blocking send; sent, or closed with the value handed back
  try_send,      ///< send without waiting; sent, full or closed, the value handed back unless sent
  send_for,      ///< send with a one-hour timeout that only the model's virtual time can end
  recv,          ///< blocking receive; a value, or closed once closed and drained
  try_recv,      ///< receive without waiting; received, empty or closed
  recv_for,      ///< receive with a one-hour timeout that only virtual time can end
  iterate,       ///< range-for over the receiver: one value, or to the end when the pair closes
  close_tx,      ///< sender::close()
  close_rx,      ///< receiver::close()
  drop_sender,   ///< destroys a sender handle: the last one when the partner holds none
  drop_receiver  ///< destroys a receiver handle: the last one when the partner holds none
};

struct op_row {
  op id;
  char const* name;
};

constexpr std::array<op_row, 11> op_rows{{{op::send, "send"},
                                          {op::try_send, "try_send"},
                                          {op::send_for, "send_for"},
                                          {op::recv, "recv"},
                                          {op::try_recv, "try_recv"},
                                          {op::recv_for, "recv_for"},
                                          {op::iterate, "iterate"},
                                          {op::close_tx, "close_tx"},
                                          {op::close_rx, "close_rx"},
                                          {op::drop_sender, "drop_sender"},
                                          {op::drop_receiver, "drop_receiver"}}};

auto op_named(std::string_view name) -> op {
  for (auto const& row : op_rows) {
    if (name == row.name) {
      return row.id;
    }
  }
  model::check(false, "an operation name that is not in the table");
  return op::send;
}

auto is_sending(op o) -> bool {
  return o == op::send || o == op::try_send || o == op::send_for;
}
auto is_receiving(op o) -> bool {
  return o == op::recv || o == op::try_recv || o == op::recv_for || o == op::iterate;
}
auto needs_sender(op o) -> bool {
  return is_sending(o) || o == op::close_tx || o == op::drop_sender;
}
auto needs_receiver(op o) -> bool {
  return is_receiving(o) || o == op::close_rx || o == op::drop_receiver;
}
auto is_closing(op o) -> bool {
  return o == op::close_tx || o == op::close_rx || o == op::drop_sender || o == op::drop_receiver;
}
/// Ends a receiver's wait with closed: close, or the partner dropping the last sender (a
/// receiving operation holds no sender).
auto ends_receivers(op o) -> bool {
  return o == op::close_tx || o == op::close_rx || o == op::drop_sender;
}
/// Ends a sender's wait with closed: close, or the partner dropping the last receiver.
auto ends_senders(op o) -> bool {
  return o == op::close_tx || o == op::close_rx || o == op::drop_receiver;
}

constexpr int unlimited = std::numeric_limits<int>::max();
/// Slots per block of the unbounded flavour (detail/channel/list_channel.hpp).
constexpr int block_slots = 31;

// Value indices (payload_ledger): each operation's side sends its side number; the prefill
// is 10.., a feeder's values 20.., finish()'s probes 30 and 31.
constexpr int first_prefill = 10;
constexpr int first_fed = 20;
constexpr int closed_probe = 30;
constexpr int open_probe = 31;

/// How a pair's channel is prepared so that both operations can finish on their own, and a
/// blocking operation waits for exactly what its partner does where that is the point.
struct plan {
  /// Buffered flavours: values in the channel before the operations start.
  int prefill = 0;
  /// Bounded: the capacity (1, or 2 where two values must fit).
  std::size_t capacity = 1;
  /// Rendezvous: values a feeder thread offers with blocking sends (the prefill of a channel
  /// that cannot buffer).
  int feed = 0;
  /// Rendezvous: a sink thread receives until the channel closes (the room of a channel that
  /// cannot buffer).
  bool sink = false;
  /// iterate: values to take before leaving the loop.
  std::array<int, 2> quota{1, 1};
};

/// Buffered: whether receiving op `self` gets a value of its own in the channel.
auto prefills_for(flavour f, op self, op other) -> bool {
  if (is_sending(other)) {
    // Bounded: the channel starts full, so the sender waits for the receiver to make room.
    // Unbounded and lanes: the receiver waits for the sender's value (the sender's lane is
    // not the prefill's for sure, so a full lane would not make it wait).
    return f == flavour::bounded;
  }
  if (ends_receivers(other)) {
    // recv and recv_for wait until the partner closes; try_recv and iterate must still get
    // a value buffered before the close.
    return self == op::try_recv || self == op::iterate;
  }
  return true;
}

/// Rendezvous: whether receiving op `self` needs a value offered by the feeder.
auto feeds_for(op self, op other) -> bool {
  if (other == op::send || ends_receivers(other)) {
    return false;
  }
  if (is_sending(other)) {
    // try_send and send_for may miss the receiver; a blocking receiver needs a sure sender.
    return self == op::recv || self == op::iterate;
  }
  return true;
}

/// Rendezvous: whether sending op `self` needs the sink.
auto sinks_for(op self, op other) -> bool {
  if (other == op::recv || other == op::iterate || ends_senders(other)) {
    return false;
  }
  if (other == op::try_recv || other == op::recv_for) {
    return self == op::send;
  }
  return true;
}

auto plan_for(flavour f, op a, op b) -> plan {
  plan p;
  std::array<op, 2> const ops{a, b};
  int room = 0;
  bool full_for_close = false;
  for (std::size_t s = 0; s < 2; ++s) {
    op const self = ops[s];
    op const other = ops[1 - s];
    if (self == op::iterate && ends_receivers(other)) {
      p.quota[s] = unlimited;
    }
    if (f == flavour::rendezvous) {
      p.feed += is_receiving(self) && feeds_for(self, other) ? 1 : 0;
      p.sink = p.sink || (is_sending(self) && sinks_for(self, other));
      continue;
    }
    p.prefill += is_receiving(self) && prefills_for(f, self, other) ? 1 : 0;
    if (is_sending(self) && !is_receiving(other)) {
      if (ends_senders(other)) {
        full_for_close = true;  // the sender waits on a full channel until the close
      } else {
        ++room;
      }
    }
  }
  if (f != flavour::rendezvous) {
    if (is_closing(a) && is_closing(b)) {
      p.prefill = 1;  // a buffered value that close must keep and a discard must destroy
    } else if (a == op::drop_receiver || b == op::drop_receiver) {
      ++p.prefill;  // a value for the last receiver's discard to destroy
    }
    if (full_for_close && f == flavour::bounded && p.prefill == 0) {
      p.prefill = 1;
    }
    p.capacity = static_cast<std::size_t>(p.prefill + room > 1 ? p.prefill + room : 1);
  }
  return p;
}

/// Where every value ended up.
struct books {
  spindle_test::payload_ledger ledger;
  std::vector<int> made;
  std::array<std::vector<int>, 2> got;  // received by the operation on each side
  std::vector<int> sink;                // received by the rendezvous sink
  std::vector<int> drained;             // received by finish()
  std::vector<int> probe;               // finish()'s round trip on an open channel
  std::vector<int> handed_back;         // returned by a send that did not happen
  std::vector<int> discarded;           // destroyed by the channel
};

/// A channel value: a ledger index inside a tracked instance. Taking it records the index;
/// one destroyed while it still holds its index was destroyed by the channel.
class parcel {
 public:
  parcel(books& b, int index) noexcept
      : books_(&b), index_(index), item_(static_cast<std::uint64_t>(index)) {}
  parcel(parcel&& other) noexcept
      : books_(other.books_),
        index_(std::exchange(other.index_, -1)),
        item_(std::move(other.item_)) {}
  parcel(parcel const&) = delete;
  auto operator=(parcel const&) -> parcel& = delete;
  auto operator=(parcel&&) -> parcel& = delete;
  ~parcel() {
    if (index_ >= 0) {
      books_->discarded.push_back(index_);
    }
  }

  /// A value outside the books (the unbounded flavour's warm-up).
  static auto blank(books& b) noexcept -> parcel { return parcel(b, -1); }

  /// Checks the payload, records the index in `into`, returns it.
  auto take(std::vector<int>& into) -> int {
    int const index = std::exchange(index_, -1);
    model::check(index >= 0, "a value was taken twice");
    books_->ledger.take(into, index);
    return index;
  }

 private:
  books* books_;
  int index_;
  spindle_test::tracked item_;
};

/// FIFO: whether value `x` must leave a channel of flavour `f` before value `y`. The prefill
/// is in the channel before any other thread starts, so it precedes everything, in its own
/// order (lanes: only in its own order, being one sender handle's); the feeder's values follow
/// each other. Values of different threads sent concurrently are not ordered.
auto precedes(flavour f, int x, int y) -> bool {
  auto const prefilled = [](int i) { return i >= first_prefill && i < first_fed; };
  auto const fed = [](int i) { return i >= first_fed && i < closed_probe; };
  if (prefilled(x)) {
    return f == flavour::lanes ? prefilled(y) && x < y : !prefilled(y) || x < y;
  }
  return fed(x) && fed(y) && x < y;
}

/// Inside an execution: one receiver's values, in the order it took them, respect FIFO.
void expect_in_order(flavour f, std::vector<int> const& list) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    for (std::size_t j = i + 1; j < list.size(); ++j) {
      model::check(!precedes(f, list[j], list[i]), "values were received out of order");
    }
  }
}

/// Inside an execution: nothing `late` took after `early` had finished had to leave the
/// channel before what `early` took.
void expect_before(flavour f, std::vector<int> const& early, std::vector<int> const& late) {
  for (int e : early) {
    for (int l : late) {
      model::check(!precedes(f, l, e), "a value was left behind while a later one was received");
    }
  }
}

/// The state of one pair: the channel, prepared as `plan_for` says, the handles each side's
/// operation takes, the helper threads of the rendezvous, and the books.
template <flavour F>
class channel_pair {
 public:
  using sender = spindle::sender<parcel>;
  using receiver = spindle::receiver<parcel>;

  channel_pair(std::string_view a, std::string_view b)
      : ops_{op_named(a), op_named(b)}, plan_(plan_for(F, ops_[0], ops_[1])) {
    baseline_ = spindle_test::tracked::live();
    bool const drops_tx = ops_[0] == op::drop_sender || ops_[1] == op::drop_sender;
    bool const drops_rx = ops_[0] == op::drop_receiver || ops_[1] == op::drop_receiver;
    closes_ = is_closing(ops_[0]) || is_closing(ops_[1]);
    senders_may_close_ = ends_senders(ops_[0]) || ends_senders(ops_[1]);
    receivers_may_close_ = ends_receivers(ops_[0]) || ends_receivers(ops_[1]);

    auto ch = F == flavour::unbounded    ? spindle::unbounded<parcel>()
              : F == flavour::rendezvous ? spindle::bounded<parcel>(0)
              : F == flavour::lanes ? spindle::bounded_lanes<parcel>(plan_.capacity, matrix_lanes)
                                    : spindle::bounded<parcel>(plan_.capacity);
    if constexpr (F == flavour::unbounded) {
      // Alone, before any other thread: move both positions to the end of the first block,
      // so that the prefill and the pair's sends take its last slots and cross into the next.
      int const warm_up = block_slots - (plan_.prefill > 1 ? plan_.prefill : 1);
      for (int i = 0; i < warm_up; ++i) {
        model::check(ch.first.try_send(parcel::blank(books_)).is_sent(), "warm-up send failed");
        model::check(ch.second.try_recv().is_received(), "warm-up receive failed");
      }
    }
    for (int k = 0; k < plan_.prefill; ++k) {
      model::check(ch.first.try_send(make(first_prefill + k)).is_sent(), "prefill failed");
    }
    for (std::size_t s = 0; s < 2; ++s) {
      if (needs_sender(ops_[s])) {
        tx_[s].emplace(ch.first);
      }
      if (needs_receiver(ops_[s])) {
        rx_[s].emplace(ch.second);
      }
    }
    if (plan_.feed > 0) {
      helper_tx_.emplace(ch.first);
    }
    if (plan_.sink) {
      helper_rx_.emplace(ch.second);
    }
    // finish() keeps a handle of each side, except the side whose last handle the pair drops.
    if (!drops_tx) {
      keep_tx_.emplace(std::move(ch.first));
    }
    if (!drops_rx) {
      keep_rx_.emplace(std::move(ch.second));
    }
    // The channel's no-lost-wake-up invariant at every quiescent point of the pair (a timed
    // wait that missed its wake would otherwise end in a timeout, not a deadlock). Only while
    // a kept handle holds the state alive: finish() drops it first.
    if (keep_rx_ || keep_tx_) {
      auto const& state = keep_rx_ ? spindle::detail::channel_access::state_of(*keep_rx_)
                                   : spindle::detail::channel_access::state_of(*keep_tx_);
      no_lost_wake_up_.emplace([&state] { return state.lost_wake_up(); });
    }
    if (plan_.feed > 0) {
      helper_ = std::make_unique<model::thread>([this] { feed(); });
    } else if (plan_.sink) {
      helper_ = std::make_unique<model::thread>([this] { drain_into_sink(); });
    }
  }

  /// Runs operation `o` (see `op` for what each one does and may return) with the handles
  /// prepared for `side`, which die when it returns; the results are checked as they come.
  void run(op o, int side) {
    auto const s = static_cast<std::size_t>(side);
    switch (o) {
      case op::send: {
        auto tx = take(tx_[s]);
        after_send(o, side, tx.send(make(side)));
        break;
      }
      case op::try_send: {
        auto tx = take(tx_[s]);
        after_send(o, side, tx.try_send(make(side)));
        break;
      }
      case op::send_for: {
        auto tx = take(tx_[s]);
        after_send(o, side, tx.send_for(make(side), std::chrono::hours(1)));
        break;
      }
      case op::recv: {
        auto rx = take(rx_[s]);
        auto v = rx.recv();
        after_recv(o, side,
                   v ? spindle::recv_result<parcel>{recv_status::received, std::move(v)}
                     : spindle::recv_result<parcel>{recv_status::closed, std::nullopt});
        break;
      }
      case op::try_recv: {
        auto rx = take(rx_[s]);
        after_recv(o, side, rx.try_recv());
        break;
      }
      case op::recv_for: {
        auto rx = take(rx_[s]);
        after_recv(o, side, rx.recv_for(std::chrono::hours(1)));
        break;
      }
      case op::iterate: {
        auto rx = take(rx_[s]);
        int const quota = plan_.quota[s];
        int n = 0;
        bool reached_end = true;
        for (auto v : rx) {
          v.take(books_.got[s]);
          if (++n == quota) {
            reached_end = false;
            break;
          }
        }
        if (reached_end) {
          saw_closed();
        }
        break;
      }
      case op::close_tx: {
        auto tx = take(tx_[s]);
        tx.close();
        model::check(tx.is_closed(), "sender::close() left the channel open");
        break;
      }
      case op::close_rx: {
        auto rx = take(rx_[s]);
        rx.close();
        model::check(rx.is_closed(), "receiver::close() left the channel open");
        break;
      }
      case op::drop_sender:
        tx_[s].reset();
        break;
      case op::drop_receiver:
        rx_[s].reset();
        break;
    }
  }

  /// After both operations: the channel's state, a drain, a probe, then exactly-once, the
  /// instance count and FIFO over the books.
  void finish() {
    no_lost_wake_up_.reset();
    // The state both operations left, before the helpers are released.
    if (keep_rx_ || keep_tx_) {
      bool const closed = keep_rx_ ? keep_rx_->is_closed() : keep_tx_->is_closed();
      model::check(closed == closes_, closes_ ? "the pair closed the channel but it is open"
                                              : "the channel closed with no close in the pair");
    }
    bool const closed = closes_ || helper_ != nullptr;
    if (helper_) {
      // The feeder's last offer or the sink's wait ends with the close.
      if (keep_tx_) {
        keep_tx_->close();
      } else {
        keep_rx_->close();
      }
      helper_->join();
    }
    if (!keep_rx_) {
      // The last receiver is gone: whatever was buffered was destroyed then, not later.
      model::check(spindle_test::tracked::live() == baseline_,
                   "the last receiver's drop left values in the channel");
    }
    if (keep_rx_) {
      std::size_t const buffered = keep_rx_->size();
      for (;;) {
        auto r = keep_rx_->try_recv();
        if (!r.is_received()) {
          model::check(r.status == (closed ? recv_status::closed : recv_status::empty),
                       "a drained channel reported the wrong status");
          break;
        }
        r.value->take(books_.drained);
      }
      model::check(books_.drained.size() == buffered, "size() disagreed with the drain");
      if (F == flavour::rendezvous) {
        model::check(buffered == 0, "a rendezvous buffered a value");
      }
    }
    if (receive_saw_closed_) {
      model::check(books_.drained.empty(), "a receive reported closed while values were left");
    }
    if (keep_tx_) {
      int const index = closed ? closed_probe : open_probe;
      auto r = keep_tx_->try_send(make(index));
      if (closed) {
        model::check(r.is_closed() && r.value.has_value(),
                     "try_send after close did not report closed with the value");
        r.value->take(books_.handed_back);
      } else if (F == flavour::rendezvous) {
        // Nobody waits to receive.
        model::check(r.is_full() && r.value.has_value(), "a rendezvous try_send met nobody");
        r.value->take(books_.handed_back);
        model::check(keep_rx_->try_recv().is_empty(), "a rendezvous try_recv met nobody");
      } else {
        model::check(r.is_sent(), "an open, drained channel refused a value");
        auto v = keep_rx_->try_recv();
        model::check(v.is_received(), "an open channel lost the value just sent");
        model::check(v.value->take(books_.probe) == index, "the channel returned another value");
      }
    }
    keep_tx_.reset();
    keep_rx_.reset();
    model::check(spindle_test::tracked::live() == baseline_,
                 "a value outlived the channel or was destroyed twice");
    spindle_test::expect_each_of_once({books_.got[0], books_.got[1], books_.sink, books_.drained,
                                       books_.probe, books_.handed_back, books_.discarded},
                                      books_.made);
    for (auto const* list : {&books_.got[0], &books_.got[1], &books_.sink, &books_.drained}) {
      expect_in_order(F, *list);
    }
    for (auto const* list : {&books_.got[0], &books_.got[1], &books_.sink}) {
      expect_before(F, *list, books_.drained);
    }
  }

 private:
  auto make(int index) -> parcel {
    books_.made.push_back(index);
    return parcel(books_, books_.ledger.make(index));
  }

  /// Moves a handle out of the fixture, so that it dies when the operation returns.
  template <class Handle>
  static auto take(std::optional<Handle>& slot) -> Handle {
    Handle h = std::move(*slot);
    slot.reset();
    return h;
  }

  void after_send(op o, int side, spindle::send_result<parcel> r) {
    if (r.is_sent()) {
      model::check(!r.value.has_value(), "a sent value was handed back too");
      return;
    }
    model::check(r.value.has_value(), "a send that did not happen lost the value");
    model::check(r.value->take(books_.handed_back) == side, "a send handed back another value");
    switch (r.status) {
      case send_status::closed:
        model::check(senders_may_close_, "a send reported closed with no close in the pair");
        break;
      case send_status::full:
        model::check(o == op::try_send && F != flavour::unbounded,
                     "full from an operation that waits, or from the unbounded flavour");
        break;
      case send_status::timed_out:
        model::check(o == op::send_for,
                     "timed_out from an operation with no deadline, or before the hour");
        break;
      case send_status::cancelled:
        model::check(false, "cancelled from a send with no stop token");
        break;
      case send_status::sent:
        break;
    }
  }

  void after_recv(op o, int side, spindle::recv_result<parcel> r) {
    switch (r.status) {
      case recv_status::received:
        model::check(r.value.has_value(), "received without a value");
        r.value->take(books_.got[static_cast<std::size_t>(side)]);
        return;
      case recv_status::closed:
        saw_closed();
        break;
      case recv_status::empty:
        model::check(o == op::try_recv, "empty from a receive that waits");
        break;
      case recv_status::timed_out:
        model::check(o == op::recv_for,
                     "timed_out from a receive with no deadline, or before the hour");
        break;
      case recv_status::cancelled:
        model::check(false, "cancelled without a stop token");
        break;
    }
    model::check(!r.value.has_value(), "a failed receive carried a value");
  }

  /// A receive ended with closed: the pair must have closed the receivers' side.
  void saw_closed() {
    model::check(receivers_may_close_, "a receive reported closed with no close in the pair");
    receive_saw_closed_ = true;
  }

  /// The rendezvous feeder: offers its values one by one; the last ones may meet the close.
  void feed() {
    auto tx = take(helper_tx_);
    for (int k = 0; k < plan_.feed; ++k) {
      auto r = tx.send(make(first_fed + k));
      if (!r.is_sent()) {
        model::check(r.is_closed() && r.value.has_value(), "the feeder's send lost its value");
        r.value->take(books_.handed_back);
      }
    }
  }

  /// The rendezvous sink: receives until the channel is closed.
  void drain_into_sink() {
    auto rx = take(helper_rx_);
    while (auto v = rx.recv()) {
      v->take(books_.sink);
    }
  }

  std::array<op, 2> ops_;
  plan plan_;
  books books_;
  std::int64_t baseline_ = 0;
  bool closes_ = false;
  bool senders_may_close_ = false;
  bool receivers_may_close_ = false;
  bool receive_saw_closed_ = false;
  std::array<std::optional<sender>, 2> tx_;
  std::array<std::optional<receiver>, 2> rx_;
  std::optional<sender> helper_tx_;
  std::optional<receiver> helper_rx_;
  std::optional<sender> keep_tx_;
  std::optional<receiver> keep_rx_;
  std::optional<model::quiescence_invariant> no_lost_wake_up_;
  std::unique_ptr<model::thread> helper_;
};

/// The table, generated from op_rows: the same operations for every flavour.
template <flavour F>
auto channel_ops() -> std::vector<spindle_test::operation<channel_pair<F>>> const& {
  static std::vector<spindle_test::operation<channel_pair<F>>> const ops = [] {
    std::vector<spindle_test::operation<channel_pair<F>>> out;
    for (auto const& row : op_rows) {
      op const id = row.id;
      out.push_back({row.name, [id](channel_pair<F>& f, int side) { f.run(id, side); }});
    }
    return out;
  }();
  return ops;
}

using bounded_pair = channel_pair<flavour::bounded>;
using unbounded_pair = channel_pair<flavour::unbounded>;
using rendezvous_pair = channel_pair<flavour::rendezvous>;
using lanes_pair = channel_pair<flavour::lanes>;

}  // namespace

// bounded(1), or bounded(2) where two values must fit; a sender meeting a receiver or a close
// starts on a full channel.
SPINDLE_OPERATION_MATRIX(BoundedPairs, bounded_pair, channel_ops<flavour::bounded>(),
                         spindle_test::pair_schedules(200));
// unbounded, with both positions moved to the end of the first block: the pair's values take
// its last slots and cross into the next block.
SPINDLE_OPERATION_MATRIX(UnboundedPairs, unbounded_pair, channel_ops<flavour::unbounded>(),
                         spindle_test::pair_schedules(200));
// bounded(0), with a feeder or a sink thread where an operation has no sure partner.
SPINDLE_OPERATION_MATRIX(RendezvousPairs, rendezvous_pair, channel_ops<flavour::rendezvous>(),
                         spindle_test::pair_schedules(200));
// bounded_lanes(1 or 2, two lanes): the prefill in lane 0, each operation's sender a copy in
// a lane of its own (1, then 0), so a receiver waits for a value in the other lane as well as
// its own, and close races a send into a lane it has not marked yet.
SPINDLE_OPERATION_MATRIX(LanesPairs, lanes_pair, channel_ops<flavour::lanes>(),
                         spindle_test::pair_schedules(200));

// Timeouts: a parked send_for/recv_for may be ended by the model's virtual time at any point,
// and then returns timed_out (detail/channel/wait_options.hpp, deadline_passed): every timed
// cell explores a timeout racing with the partner's wake-up. A lost wake-up behind a timed wait
// ends in a timeout rather than a deadlock; the untimed cells catch it.
//
// Not rows of the matrix:
//   - recv(stop_token), async_recv(stop_token): a stop request from another thread goes
//     through std::stop_token's own atomics, which are not the checker's, so it is not
//     modelable (tests/channel_test.cpp covers it with real threads).
//   - send_until / recv_until: the _for calls with the deadline converted once at the call
//     (detail/sync/deadline.hpp); the waits are the same code.
//   - async_send / async_recv and their timed forms: they need an executor and are the
//     model coroutine tests' subject (tests/model/coro_test.cpp).
