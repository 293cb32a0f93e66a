// SPDX-License-Identifier: BSL-1.0
#pragma once
// The lanes flavour (bounded_lanes): a bounded channel that scales with its producers by
// giving up one global FIFO for an order per sender handle.
//
// Shape: `lanes` bounded rings (array_channel, each `lane_capacity` slots), allocated when
// the channel is made. Every sender handle owns one lane: the first handle lane 0, each copy
// the next lane, round robin once every lane has a handle (channel_state::acquire_sender hands
// them out). A send goes into its handle's lane and only there, waiting while that lane is
// full; a receive scans the lanes that have had a handle for a value. So producers that each
// hold their own copy of the sender never touch each other's cache lines: the bounded
// channel's shared tail position, which every producer CASes and which is what makes it
// collapse on many cores (docs/performance.md, "Coherence cost meter": with many threads its
// line moves several times per message), is split into one per producer. moodycamel's
// ConcurrentQueue scales with producers the same way, with a sub-queue per producer
// (cameron314/concurrentqueue, "Producer tokens" in its README); it was the only peer whose
// throughput grew from 4 to 32 threads on the 16-core machine (issue 32's table).
//
// Order: values sent through one sender handle are received in the order of their sends
// (each lane is a linearizable FIFO, array_channel.hpp); values sent through different
// handles have no order between them. A copy of a handle is another handle with its own lane:
// a thread that sends through a handle and then through a copy of it may see the second value
// received first.
//
// Receivers: each thread keeps a hint of the lane it last received from and stays on it for a
// burst of up to `burst` values, then moves to the next lane, so that receivers spread over
// the lanes and none is starved: a receiver visits every lane at least once in every
// `burst * lanes` of its receives that find values. The hint is per thread and not per
// channel (a position to start scanning from, never a condition of correctness).
//
// What a scan is: try_recv looks at the lanes one after another, so `empty` means that each
// lane was empty when it was looked at, not that all were empty at one moment (a value sent
// into a lane already passed is found by the next look). moodycamel's try_dequeue says the
// same. A blocking receive never misses a value for it: a receiver parks only after it
// registered on the channel's wait list and then found every lane empty with seq_cst loads,
// and every send notifies that list after its claim (the Dekker pair of wait_list.hpp).
//
// Close: the lanes are marked closed from the last to the first, so that a receiver that sees
// lane 0 closed knows every lane is (is_closed() reads lane 0). A receive reports `closed` only
// after it saw lane 0 closed and then found every lane that has had a handle closed and
// drained. A send into a lane that is not yet marked still succeeds while close() runs; every
// send that starts after close() returned fails. Unlike the bounded flavour, two sends that
// run concurrently with one close() may therefore see it differently (one through a lane
// already marked fails, a later one through a lane not yet marked succeeds); neither value is
// lost: the receivers drain every lane before they report closed.
//
// Synchronization:
//   handed_  the count of lanes handed to sender handles (a copy increments it, seq_cst);
//            read by receivers to bound their scan. A lane is handed out before any send into
//            it (recv_closed says why a receiver that saw the channel closed sees every lane).
//   receivers_  the channel's receiver wait list: every successful send notifies it after its
//            claim, a seq_cst CAS on the lane's tail (the state change (B) of wait_list.hpp);
//            a receiver re-checks every lane with seq_cst loads after registering (A).
//   each lane's own lists: its senders_ list is where a sender waits for room in its lane;
//            its receivers_ list is never waited on.
//
// Memory: lanes * lane_capacity slots of (8 bytes + sizeof(T), aligned), and a few cache lines
// per lane, allocated once.

#include <spindle/channel_result.hpp>
#include <spindle/detail/channel/array_channel.hpp>
#include <spindle/detail/channel/readiness.hpp>
#include <spindle/detail/channel/recv_blocking.hpp>
#include <spindle/detail/channel/wait_options.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/available_cpus.hpp>
#include <spindle/detail/sync/cache_padded.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/wait_list.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

template <class T>
class lanes_channel {
 public:
  /// The most lanes a channel may have.
  static constexpr std::size_t max_lanes = 4096;
  /// Values a receiver takes from one lane in a row before it moves to the next.
  static constexpr std::uint32_t burst = 32;

  /// The lane count when the caller leaves it to the channel: one per processor the process
  /// may use, at most 64.
  static auto default_lanes() noexcept -> std::size_t {
    return std::clamp<std::size_t>(available_cpus(), 1, 64);
  }

  /// Throws: std::invalid_argument if lane_capacity is 0 or lanes is 0 or above max_lanes;
  /// std::length_error if lanes * lane_capacity slots do not fit in memory's address space;
  /// std::bad_alloc.
  lanes_channel(std::size_t lane_capacity, std::size_t lanes)
      : lane_count_(checked_lanes(lane_capacity, lanes)),
        lane_capacity_(lane_capacity),
        lanes_(std::make_unique<std::unique_ptr<array_channel<T>>[]>(lanes)) {
    for (std::size_t i = 0; i < lane_count_; ++i) {
      // Contiguous rings: a lane has one producer, and one producer moved more messages
      // through a contiguous ring than through a spread one on 16 cores (docs/performance.md,
      // "Channel variants on 16 cores", 1P/1C).
      lanes_[i] = std::make_unique<array_channel<T>>(lane_capacity, /*spread=*/false);
    }
  }

  lanes_channel(lanes_channel const&) = delete;
  auto operator=(lanes_channel const&) -> lanes_channel& = delete;
  ~lanes_channel() = default;

  /// The lane for a new sender handle (channel_state::acquire_sender): the next in turn.
  auto hand_out_lane() noexcept -> std::uint32_t {
    // seq_cst: pairs with the receivers' loads of handed_ in their scans and readiness
    // checks, which must see every lane a value can be in (see recv_closed).
    auto const n = handed_.value.fetch_add(1, std::memory_order_seq_cst);
    return static_cast<std::uint32_t>(n % lane_count_);
  }

  /// Sends into `lane` without waiting (value moved from only when sent).
  auto try_send(T& value, std::uint32_t lane = 0) noexcept -> send_status {
    auto const status = lane_at(lane).try_send(value);
    if (status == send_status::sent) {
      receivers_.value.notify_one();
    }
    return status;
  }

  /// Sends into `lane`, waiting while it is full: sent, closed or timed_out.
  auto send(T& value, wait_options const& options, std::uint32_t lane = 0) noexcept -> send_status {
    auto const status = lane_at(lane).send(value, options);
    if (status == send_status::sent) {
      receivers_.value.notify_one();
    }
    return status;
  }

  /// Receives without waiting: received, empty (every lane was empty when looked at) or
  /// closed (every lane closed and drained).
  ///
  /// The lane the thread took its last value from is tried inline; the scan of every lane is
  /// a call (try_recv_scan), as for first_look().
  SPINDLE_ALWAYS_INLINE auto try_recv() noexcept -> recv_result<T> {
    return own_lane_first([](array_channel<T>& lane) { return lane.try_recv(); },
                          [this] { return try_recv_scan(); });
  }

  /// try_recv() when the thread's lane had nothing: every lane, from the hint on.
  [[gnu::noinline]] auto try_recv_scan() noexcept -> recv_result<T> {
    bool saw_open = false;
    if (auto r = scan(
            [&](array_channel<T>& lane) {
              auto got = lane.try_recv();
              saw_open = saw_open || got.status == recv_status::empty;
              return got;
            },
            // seq_cst: `empty` must count every lane handed out before this call
            // (hand_out_lane's fetch_add).
            std::memory_order_seq_cst);
        r.status == recv_status::received) {
      return r;
    }
    if (saw_open) {
      return recv_result<T>{recv_status::empty, std::nullopt};
    }
    return recv_closed();
  }

  /// The first look of a blocking receive: a value ready in some lane, else `empty`. The lane
  /// the thread took its last value from is polled inline and the scan of every lane is a
  /// call: a scan inline made the whole receive a call, whose value came back through the
  /// stack, and a receive that finds its value where the last one was need not pay for the
  /// scan (docs/performance.md, "The lanes channel").
  SPINDLE_ALWAYS_INLINE auto first_look() noexcept -> recv_result<T> {
    return own_lane_first([](array_channel<T>& lane) { return lane.first_look(); },
                          [this] { return poll_recv(); });
  }

  /// Receives, waiting while every lane is empty: received, closed, timed_out or cancelled.
  auto recv(wait_options const& options) noexcept -> recv_result<T> {
    return recv_blocking<T>([this] { return poll_recv(); }, [this] { return try_recv(); },
                            receivers_.value, [this] { return recv_ready(nullptr); }, options);
  }

  /// Closes every lane, the last first (see the header); true for the call that closed lane 0.
  auto close() noexcept -> bool {
    for (std::size_t i = lane_count_; i-- > 1;) {
      static_cast<void>(lanes_[i]->close());
    }
    bool const closed = lanes_[0]->close();
    // After lane 0's mark: a receiver registered before this finds itself woken, one
    // registered after it sees lane 0 closed in its re-check.
    receivers_.value.close_all();
    return closed;
  }

  /// The last receiver is gone: closes the channel and destroys every buffered value now.
  void discard() noexcept {
    static_cast<void>(close());
    for (std::size_t i = 0; i < lane_count_; ++i) {
      lanes_[i]->discard();
    }
  }

  // Select: a send watches its handle's lane; a receive watches the channel's list.
  void watch_send(wait_entry& e, std::uint32_t lane = 0) noexcept { lane_at(lane).watch_send(e); }
  void unwatch_send(wait_entry& e, std::uint32_t lane = 0) noexcept {
    lane_at(lane).unwatch_send(e);
  }
  void watch_recv(wait_entry& e) noexcept { receivers_.value.push(e); }
  void unwatch_recv(wait_entry& e) noexcept { receivers_.value.remove(e); }
  /// Whether a send into `lane` would not find it full (or finds it closed); seq_cst loads.
  [[nodiscard]] auto send_ready(waiter const* self, std::uint32_t lane = 0) const noexcept -> bool {
    return lane_at(lane).send_ready(self);
  }
  /// Whether some lane that has had a handle holds a value, or the channel is closed; seq_cst
  /// loads (the re-check after registering on receivers_, wait_list.hpp (A)).
  [[nodiscard]] auto recv_ready(waiter const* /*self*/) const noexcept -> bool {
    if (is_closed()) {
      return true;
    }
    auto const n = handed();
    for (std::size_t i = 0; i < n; ++i) {
      // A lane's own readiness would also count it closed, and while close() marks the lanes
      // one by one, a lane closed before lane 0 holds nothing for a receiver to wait out.
      if (lanes_[i]->holds_value()) {
        return true;
      }
    }
    return false;
  }

  /// The no-lost-wake-up invariant (array_channel::lost_wake_up), over every lane's senders
  /// and the channel's receivers.
  [[nodiscard]] auto lost_wake_up() const noexcept -> char const* {
    // The receivers wait on the channel's list; the senders on their lanes' (checked below).
    if (auto const* broken = buffered_lost_wake_up(
            receivers_.value, [this] { return recv_ready(nullptr); }, nullptr,
            [] { return false; })) {
      return broken;
    }
    for (std::size_t i = 0; i < lane_count_; ++i) {
      if (auto const* broken = lanes_[i]->lost_wake_up()) {
        return broken;
      }
    }
    return nullptr;
  }

  [[nodiscard]] auto is_closed() const noexcept -> bool { return lanes_[0]->is_closed(); }

  /// Every lane's slots: lanes * lane_capacity.
  [[nodiscard]] auto capacity() const noexcept -> std::size_t {
    return lane_count_ * lane_capacity_;
  }
  [[nodiscard]] auto lane_capacity() const noexcept -> std::size_t { return lane_capacity_; }
  [[nodiscard]] auto lanes() const noexcept -> std::size_t { return lane_count_; }

  /// The number of buffered values, over every lane (a snapshot).
  [[nodiscard]] auto size() const noexcept -> std::size_t {
    std::size_t total = 0;
    for (std::size_t i = 0; i < lane_count_; ++i) {
      total += lanes_[i]->size();
    }
    return total;
  }

 private:
  /// A receiving thread's place in the lanes: where its next scan starts, and how many values
  /// in a row it took there.
  struct recv_hint {
    std::uint32_t lane = 0;
    std::uint32_t taken = 0;
  };
  static constexpr std::uint32_t unseeded = ~std::uint32_t{0};
#if defined(SPINDLE_MODEL_CHECK)
  /// The hints of one model execution, one per model thread.
  struct model_hints {
    std::array<recv_hint, ::spindle::model::max_threads> of{};
    model_hints() {
      for (auto& h : of) {
        h.lane = unseeded;
      }
    }
  };
#endif

  static auto checked_lanes(std::size_t lane_capacity, std::size_t lanes) -> std::size_t {
    if (lane_capacity == 0) {
      throw std::invalid_argument("spindle: bounded_lanes lane capacity must be at least 1");
    }
    if (lanes == 0 || lanes > max_lanes) {
      throw std::invalid_argument("spindle: bounded_lanes needs 1 to 4096 lanes");
    }
    if (lane_capacity > std::numeric_limits<std::size_t>::max() / lanes) {
      throw std::length_error("spindle: bounded_lanes capacity too large to allocate");
    }
    return lanes;
  }

  [[nodiscard]] auto lane_at(std::uint32_t lane) const noexcept -> array_channel<T>& {
    SPINDLE_ASSERT(lane < lane_count_, "a sender's lane out of range");
    return *lanes_[lane];
  }

  /// The lanes that have had a sender handle (a prefix: handed out in order).
  [[nodiscard]] auto handed(std::memory_order order = std::memory_order_seq_cst) const noexcept
      -> std::size_t {
    // The order is the caller's: seq_cst where it pairs with hand_out_lane (readiness and
    // the closed check), acquire for a poll, whose `empty` is only a hint.
    auto const n = handed_.value.load(order);
    return n < lane_count_ ? static_cast<std::size_t>(n) : lane_count_;
  }

  /// The calling thread's hint. Constant-initialized (no guard on the fast path) to a lane
  /// no channel has, so that the first scan seeds it (seed_lane). Under the model checker
  /// the hints live in the execution (one per model thread, seeded with its index), so that
  /// no execution depends on what an earlier one left in a thread-local; null outside one.
  static auto hint() noexcept -> recv_hint* {
#if defined(SPINDLE_MODEL_CHECK)
    auto* ex = ::spindle::model::impl::current_execution;
    auto const self = ::spindle::model::impl::current_thread;
    if (ex == nullptr || self < 0) {
      return nullptr;
    }
    auto& hints = ::spindle::model::execution_local<model_hints>([] { return new model_hints; });
    return &hints.of[static_cast<std::size_t>(self) % hints.of.size()];
#else
    thread_local recv_hint mine{unseeded, 0};
    return &mine;
#endif
  }

  /// A scan's first lane for a hint that does not name one of this channel's `n` lanes: an
  /// unseeded hint starts from a lane that depends on the thread, so that receivers begin
  /// spread out.
  static auto seed_lane(recv_hint const& h, std::size_t n) noexcept -> std::size_t {
    if (h.lane != unseeded) {
      return h.lane % n;
    }
#if defined(SPINDLE_MODEL_CHECK)
    return static_cast<std::size_t>(::spindle::model::impl::current_thread) % n;
#else
    return std::hash<std::thread::id>{}(std::this_thread::get_id()) % n;
#endif
  }

  /// The fast path of try_recv() and first_look(): `look` at the lane the thread took its last
  /// value from, inline; `rest()` (the scan of every lane, a call) when that found nothing.
  template <class Look, class Rest>
  SPINDLE_ALWAYS_INLINE auto own_lane_first(Look look, Rest rest) noexcept -> recv_result<T> {
    if (recv_hint* h = hint(); h != nullptr) {
      auto const k = h->lane;
      // acquire: pairs with the seq_cst fetch_add of hand_out_lane(); a lane this load does
      // not count yet is left to the scan, whose own load counts it.
      if (k < handed(std::memory_order_acquire)) {
        if (auto r = look(*lanes_[k]); r.status == recv_status::received) {
          took_again(*h);
          return r;
        }
      }
    }
    return rest();
  }

  /// The hint after the thread took another value from its lane: the burst goes on, or ends.
  static void took_again(recv_hint& h) noexcept {
    if (++h.taken >= burst) {
      ++h.lane;  // the burst is over: move on (past the last lane, the next scan wraps)
      h.taken = 0;
    }
  }

  /// Calls `look` on each handed lane from the thread's hint on, and returns the first value
  /// it receives (moving the hint as the header says), else `empty`.
  template <class Look>
  auto scan(Look&& look, std::memory_order order) noexcept -> recv_result<T> {
    auto const n = handed(order);
    recv_hint* h = hint();
    auto const start = h == nullptr ? std::size_t{0} : seed_lane(*h, n);
    for (std::size_t i = 0; i < n; ++i) {
      auto const k = start + i < n ? start + i : start + i - n;
      auto r = look(*lanes_[k]);
      if (r.status != recv_status::received) {
        continue;
      }
      if (h != nullptr) {
        if (k != h->lane) {
          h->lane = static_cast<std::uint32_t>(k);  // a new lane: its burst begins
          h->taken = 1;
        } else {
          took_again(*h);
        }
      }
      return r;
    }
    return recv_result<T>{recv_status::empty, std::nullopt};
  }

  /// The poll of recv_blocking: each lane's poll (which reads no line a sender writes but the
  /// slot's).
  [[gnu::noinline]] auto poll_recv() noexcept -> recv_result<T> {
    // acquire: pairs with hand_out_lane(); the poll's `empty` is only a hint, which the
    // full attempt (try_recv) and the re-check before parking make exact.
    return scan([](array_channel<T>& lane) { return lane.first_look(); },
                std::memory_order_acquire);
  }

  /// try_recv once every lane it looked at was closed and drained: `closed` if lane 0 is
  /// closed (so every lane is) and every handed lane, counted after that, is closed and
  /// drained; a value found on the way is received.
  ///
  /// Why the count after lane 0's mark covers every lane a value can be in: a send into lane
  /// k succeeded before close() marked k (its CAS on k's tail precedes the mark there), the
  /// handle's lane was handed before that send, and close() marks lane 0 after k. So the
  /// hand-out happens before the mark this receiver saw, and the seq_cst load below sees it.
  auto recv_closed() noexcept -> recv_result<T> {
    if (!is_closed()) {
      return recv_result<T>{recv_status::empty, std::nullopt};
    }
    auto const n = handed();
    for (std::size_t i = 0; i < n; ++i) {
      auto r = lanes_[i]->try_recv();
      if (r.status != recv_status::closed) {
        return r;  // received, or empty: another receiver is still draining
      }
    }
    return recv_result<T>{recv_status::closed, std::nullopt};
  }

  std::size_t lane_count_;
  std::size_t lane_capacity_;
  std::unique_ptr<std::unique_ptr<array_channel<T>>[]> lanes_;
  // Lanes handed to sender handles so far (the first handle's lane 0 included).
  cache_padded<atomic<std::uint64_t>> handed_{std::in_place, 1};
  cache_padded<wait_list> receivers_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
