// SPDX-License-Identifier: BSL-1.0
#pragma once
// The shared state behind a pair of channel handles: one of the five flavours plus the
// sender and receiver reference counts that decide when the channel closes, when it discards
// its buffered values, and when it is freed.
//
// Design: crossbeam-channel's src/counter.rs: the last sender gone closes the
// channel (receivers drain, then see closed); the last receiver gone closes it and discards
// what is buffered at once; whichever side lets go last frees the state (a `destroy` flag,
// set by exchange, picks that side exactly once).
//
// Flavour dispatch is a switch on a tag that never changes (a union of the five flavours),
// not a virtual call: every operation of a handle is one predictable branch away from the
// flavour's code, and the flavours stay plain classes with the same small interface, the
// concept channel_flavour (detail/channel/flavour.hpp), which each satisfies (asserted below).
//
// Synchronization: `senders_`, `receivers_` count handles (relaxed increments: a new handle
// is made from an existing one, which keeps the state alive; acq_rel decrements: the last
// one sees every other handle's use). `destroy_` is exchanged once by each side's last handle.

#include <spindle/channel_result.hpp>
#include <spindle/detail/channel/array_channel.hpp>
#include <spindle/detail/channel/flavour.hpp>
#include <spindle/detail/channel/lanes_channel.hpp>
#include <spindle/detail/channel/list_channel.hpp>
#include <spindle/detail/channel/spsc_channel.hpp>
#include <spindle/detail/channel/tuning.hpp>
#include <spindle/detail/channel/wait_budget.hpp>
#include <spindle/detail/channel/wait_options.hpp>
#include <spindle/detail/channel/zero_channel.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/available_cpus.hpp>
#include <spindle/detail/sync/cache_padded.hpp>
#include <spindle/detail/sync/config.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// Which flavour a channel_state holds ("flavour" is spelled one way in the library: the
/// concept channel_flavour, this tag, the flavours' names).
enum class flavour_kind : std::uint8_t { array, list, zero, spsc, lanes };

/// The lane of a sender handle (lanes_channel): 0 for every other flavour, which ignores it.
using send_lane = std::uint32_t;

/// Tag of the handle constructors that adopt a count of a freshly made channel_state.
struct adopt_handle_t {
  explicit adopt_handle_t() = default;
};
inline constexpr adopt_handle_t adopt_handle{};

/// What a channel's last receiver handle runs once it has closed the channel and discarded
/// its values: a timer channel (spindle::after, spindle::tick, select.hpp) cancels its timer
/// and frees its record there, so that a timer nobody can receive from holds no memory.
struct receivers_gone_hook {
  void (*run)(receivers_gone_hook* self) noexcept = nullptr;
};

template <class T>
class channel_state {
  static_assert(bounded_channel_flavour<array_channel<T>, T>);
  static_assert(channel_flavour<list_channel<T>, T>);
  static_assert(bounded_channel_flavour<zero_channel<T>, T>);
  static_assert(bounded_channel_flavour<spsc_channel<T>, T>);
  static_assert(bounded_channel_flavour<lanes_channel<T>, T>);

 public:
  struct array_tag {};
  struct list_tag {};
  struct zero_tag {};
  struct spsc_tag {};
  struct lanes_tag {};

  /// Throws: as array_channel's constructor.
  channel_state(array_tag /*tag*/, std::size_t capacity)
      : kind_(flavour_kind::array), array_(capacity) {
    array_.watch_sender_count(&senders_);
  }
  explicit channel_state(list_tag /*tag*/) : kind_(flavour_kind::list), list_() {}
  explicit channel_state(zero_tag /*tag*/) : kind_(flavour_kind::zero), zero_() {}
  /// Throws: as spsc_channel's constructor.
  channel_state(spsc_tag /*tag*/, std::size_t capacity)
      : kind_(flavour_kind::spsc), spsc_(capacity) {}
  /// Throws: as lanes_channel's constructor.
  channel_state(lanes_tag /*tag*/, std::size_t lane_capacity, std::size_t lanes)
      : kind_(flavour_kind::lanes), lanes_(lane_capacity, lanes) {}

  channel_state(channel_state const&) = delete;
  auto operator=(channel_state const&) -> channel_state& = delete;

  ~channel_state() {
    switch (kind_) {
      case flavour_kind::array:
        std::destroy_at(&array_);
        break;
      case flavour_kind::list:
        std::destroy_at(&list_);
        break;
      case flavour_kind::zero:
        std::destroy_at(&zero_);
        break;
      case flavour_kind::spsc:
        std::destroy_at(&spsc_);
        break;
      case flavour_kind::lanes:
        std::destroy_at(&lanes_);
        break;
    }
  }

  /// Calls `fn` with the flavour.
  template <class Fn>
  auto visit(Fn&& fn) -> decltype(auto) {
    return visit_flavour(*this, std::forward<Fn>(fn));
  }
  template <class Fn>
  auto visit(Fn&& fn) const -> decltype(auto) {
    return visit_flavour(*this, std::forward<Fn>(fn));
  }

  /// Closes the channel for every handle; idempotent.
  void close() noexcept {
    visit([](auto& flavour) { static_cast<void>(flavour.close()); });
  }
  /// close() by a sender handle: the same, but the SPSC flavour knows that its one sender is
  /// not sending and skips its hand-shake (spsc_channel::close_as_sender).
  void close_as_sender() noexcept {
    if (kind_ == flavour_kind::spsc) {
      static_cast<void>(spsc_.close_as_sender());
      return;
    }
    close();
  }
  [[nodiscard]] auto is_closed() const noexcept -> bool {
    return visit([](auto const& flavour) { return flavour.is_closed(); });
  }
  /// The flavour's no-lost-wake-up invariant (array_channel::lost_wake_up()): nullptr while it
  /// holds. Meaningful only where every thread is quiescent (the model tests).
  [[nodiscard]] auto lost_wake_up() const noexcept -> char const* {
    return visit([](auto const& flavour) { return flavour.lost_wake_up(); });
  }
  /// The number of buffered values (a snapshot).
  [[nodiscard]] auto size() const noexcept -> std::size_t {
    return visit([](auto const& flavour) { return flavour.size(); });
  }

  [[nodiscard]] auto kind() const noexcept -> flavour_kind { return kind_; }

  [[nodiscard]] auto capacity() const noexcept -> std::size_t {
    switch (kind_) {
      case flavour_kind::array:
        return array_.capacity();
      case flavour_kind::list:
        return std::numeric_limits<std::size_t>::max();
      case flavour_kind::spsc:
        return spsc_.capacity();
      case flavour_kind::lanes:
        return lanes_.capacity();
      case flavour_kind::zero:
        break;
    }
    return 0;
  }

  /// The first look of a blocking receive, without recv()'s setup of a wait: the value a
  /// buffered flavour holds ready (as recv_blocking's own first look), otherwise `empty` or
  /// `closed`, after which the caller calls recv(). A rendezvous channel has no value waiting
  /// without a partner, so its first look is always `empty`. receiver::recv() inlines this
  /// into its caller and leaves the rest out of line (see there).
  auto first_look() noexcept -> recv_result<T> {
    return visit([](auto& flavour) { return flavour.first_look(); });
  }

  /// Receives through the flavour, blocking as `options` says (see recv_blocking in
  /// recv_blocking.hpp for `may_spin`, which this sets).
  auto recv(wait_options options) noexcept -> recv_result<T> {
    options.may_spin = [](void const* self) noexcept {
      return static_cast<channel_state const*>(self)->receiver_may_poll();
    };
    options.may_spin_arg = this;
    options.counters = &counters_.value;
    options.what = {wait_kind::recv, this};
    return visit([&](auto& flavour) { return flavour.recv(options); });
  }

  /// The first attempt of a blocking send, without send()'s setup of a wait: a buffered
  /// flavour's try_send, which sends or reports `full` or `closed` with `value` untouched;
  /// `full` for a rendezvous channel, whose send always takes send(). sender::send() inlines
  /// this into its caller and calls send() only when it did not send.
  /// Throws: std::bad_alloc from the unbounded flavour when it cannot grow.
  auto first_try_send(T& value, send_lane lane = 0) -> send_status {
    return kind_ == flavour_kind::zero ? send_status::full : try_send(value, lane);
  }

  /// Sends through the flavour, blocking as `options` says (the channel's counters added, and
  /// `may_spin` as for recv: a sender that found the channel full polls only when the users fit
  /// the cores).
  auto send(T& value, wait_options options, send_lane lane = 0) noexcept -> send_status {
    options.may_spin = [](void const* self) noexcept {
      return static_cast<channel_state const*>(self)->users_fit_cores();
    };
    options.may_spin_arg = this;
    options.counters = &counters_.value;
    options.what = {wait_kind::send, this};
    return visit([&](auto& flavour) {
      if constexpr (takes_lane<decltype(flavour)>) {
        return flavour.send(value, options, lane);
      } else {
        return flavour.send(value, options);
      }
    });
  }

  /// The counters of blocking calls (sender::stats(), receiver::stats()).
  [[nodiscard]] auto counters() const noexcept -> channel_counters const& {
    return counters_.value;
  }

  /// Sends without waiting, through the flavour (`value` is moved from only when sent).
  /// Throws: std::bad_alloc from the unbounded flavour when it cannot grow.
  auto try_send(T& value, send_lane lane = 0) -> send_status {
    return visit([&](auto& flavour) {
      if constexpr (takes_lane<decltype(flavour)>) {
        return flavour.try_send(value, lane);
      } else {
        return flavour.try_send(value);
      }
    });
  }
  /// Receives without waiting, through the flavour.
  auto try_recv() noexcept -> recv_result<T> {
    return visit([](auto& flavour) { return flavour.try_recv(); });
  }

  // Select hooks, forwarded to the flavour (see watch_send in the flavours). A send's hooks
  // take the sender handle's lane, as try_send does.
  void watch_send(wait_entry& e, send_lane lane = 0) noexcept {
    visit([&](auto& flavour) {
      if constexpr (takes_lane<decltype(flavour)>) {
        flavour.watch_send(e, lane);
      } else {
        flavour.watch_send(e);
      }
    });
  }
  void unwatch_send(wait_entry& e, send_lane lane = 0) noexcept {
    visit([&](auto& flavour) {
      if constexpr (takes_lane<decltype(flavour)>) {
        flavour.unwatch_send(e, lane);
      } else {
        flavour.unwatch_send(e);
      }
    });
  }
  void watch_recv(wait_entry& e) noexcept {
    visit([&](auto& flavour) { flavour.watch_recv(e); });
  }
  void unwatch_recv(wait_entry& e) noexcept {
    visit([&](auto& flavour) { flavour.unwatch_recv(e); });
  }
  [[nodiscard]] auto send_ready(waiter const* self, send_lane lane = 0) const noexcept -> bool {
    return visit([&](auto const& flavour) {
      if constexpr (takes_lane<decltype(flavour)>) {
        return flavour.send_ready(self, lane);
      } else {
        return flavour.send_ready(self);
      }
    });
  }
  [[nodiscard]] auto recv_ready(waiter const* self) const noexcept -> bool {
    return visit([&](auto const& flavour) { return flavour.recv_ready(self); });
  }
  /// Whether a party that selects a watching entry completes its operation through the
  /// entry's packet (the rendezvous), rather than only waking it to try again.
  [[nodiscard]] auto hands_off() const noexcept -> bool { return kind_ == flavour_kind::zero; }

  /// Whether every handle's thread could run at once: the sender and receiver handles number
  /// at most the processors. A heuristic for how a receiver waits, never for correctness.
  [[nodiscard]] auto users_fit_cores() const noexcept -> bool {
    // relaxed: a snapshot for a heuristic; nothing is published through it.
    auto const users = senders_.load(std::memory_order_relaxed) +
                       // relaxed: as above.
                       receivers_.load(std::memory_order_relaxed);
    return users <= available_cpus();
  }

  /// Whether a blocked receiver polls before it yields (phase (1) of wait_budget): the users
  /// fit the cores and, for the bounded flavour, it is the only receiver. Receivers polling
  /// the same slot each hold a copy of its line, which the sender's write must take back from
  /// all of them, and then race for the one position it filled; one receiver polls alone.
  /// On 16 cores, several receivers moved more messages without the polls and a ping-pong's
  /// one receiver took longer without them (docs/performance.md, "Channel variants on 16
  /// cores"). A heuristic, never for correctness.
  [[nodiscard]] auto receiver_may_poll() const noexcept -> bool {
    if constexpr (!channel_tuning::poll_shared) {
      // relaxed: a snapshot for a heuristic, as in users_fit_cores().
      if ((kind_ == flavour_kind::array || kind_ == flavour_kind::lanes) &&
          receivers_.load(std::memory_order_relaxed) > 1) {
        return false;
      }
    }
    return users_fit_cores();
  }

  /// Counts one more sender handle and returns its lane (lanes_channel hands out the next;
  /// every other flavour has only lane 0).
  auto acquire_sender() noexcept -> send_lane {
    SPINDLE_CHECK(kind_ != flavour_kind::spsc,
                  "a copy of a spindle::spsc_sender: a single-producer "
                  "channel has exactly one sender handle");
    // relaxed: the new handle is copied from a live one, which keeps the count above zero;
    // nothing is published by the increment.
    senders_.fetch_add(1, std::memory_order_relaxed);
    return kind_ == flavour_kind::lanes ? lanes_.hand_out_lane() : 0;
  }

  void acquire_receiver() noexcept {
    SPINDLE_CHECK(kind_ != flavour_kind::spsc,
                  "a copy of a spindle::spsc_receiver: a single-consumer "
                  "channel has exactly one receiver handle");
    // relaxed: as in acquire_sender().
    receivers_.fetch_add(1, std::memory_order_relaxed);
  }

  /// Drops one sender handle; the last one closes the channel. Frees the state when the
  /// receivers let go first. `self` must not be used afterwards.
  static void release_sender(channel_state* self) noexcept {
    // acq_rel: release publishes this handle's use; the last decrement acquires all of them.
    if (self->senders_.fetch_sub(1, std::memory_order_acq_rel) != 1) {
      return;
    }
    self->close_as_sender();
    self->finish();
  }

  /// Drops one receiver handle; the last one closes the channel and destroys what is
  /// buffered. Frees the state when the senders let go first.
  static void release_receiver(channel_state* self) noexcept {
    // acq_rel: as in release_sender().
    if (self->receivers_.fetch_sub(1, std::memory_order_acq_rel) != 1) {
      return;
    }
    self->visit([](auto& flavour) { flavour.discard(); });
    if (self->receivers_gone_ != nullptr) {
      // May drop the hook owner's sender handle: that side's finish() then runs first.
      self->receivers_gone_->run(self->receivers_gone_);
    }
    self->finish();
  }

  /// Installs the hook the last receiver runs (see receivers_gone_hook).
  ///
  /// Preconditions: no handle of the channel has left the thread that made it, so nothing
  /// reads the field yet; the hook's owner lives until the hook runs.
  void set_receivers_gone_hook(receivers_gone_hook* hook) noexcept { receivers_gone_ = hook; }

 private:
  /// Whether a flavour (as visit() hands it over, a reference) sends into a sender's lane: the
  /// lanes flavour; a compile-time choice inside the dispatch, so that the others pay no branch.
  template <class Flavour>
  static constexpr bool takes_lane = std::is_same_v<std::remove_cvref_t<Flavour>, lanes_channel<T>>;

  /// visit() for a const or a mutable state: `Self` is channel_state or channel_state const.
  template <class Self, class Fn>
  static auto visit_flavour(Self& self, Fn&& fn) -> decltype(auto) {
    switch (self.kind_) {
      case flavour_kind::array:
        return fn(self.array_);
      case flavour_kind::list:
        return fn(self.list_);
      case flavour_kind::spsc:
        return fn(self.spsc_);
      case flavour_kind::lanes:
        return fn(self.lanes_);
      case flavour_kind::zero:
        break;
    }
    return fn(self.zero_);
  }

  /// Called once by each side's last handle; the second call frees the state.
  void finish() noexcept {
    // acq_rel: the second side acquires the first side's release, so all use of the channel
    // happens before the delete.
    if (destroy_.exchange(true, std::memory_order_acq_rel)) {
      // SAFETY: both counts reached zero, so no handle (and no thread inside an operation)
      // refers to the state any more.
      delete this;
    }
  }

  atomic<std::size_t> senders_{1};
  atomic<std::size_t> receivers_{1};
  atomic<bool> destroy_{false};
  flavour_kind const kind_;
  // Written once before any handle is shared; read by the last receiver, whose acq_rel
  // decrement of receivers_ orders it after every handle's use (and so after the write).
  receivers_gone_hook* receivers_gone_ = nullptr;
  // Written only next to a sleep, on a line of their own so that those writes never slow the
  // fields above.
  cache_padded<channel_counters> counters_{};
  union {
    array_channel<T> array_;
    list_channel<T> list_;
    zero_channel<T> zero_;
    spsc_channel<T> spsc_;
    lanes_channel<T> lanes_;
  };
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
