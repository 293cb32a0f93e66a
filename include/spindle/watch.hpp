// SPDX-License-Identifier: BSL-1.0
#pragma once
// spindle::watch: the latest value of something, watched by any number of receivers, for
// threads and coroutines alike (a configuration, a state, a health flag). tokio's watch channel
// (tokio-rs/tokio: tokio/src/sync/watch.rs), in the shape of spindle's channels.
//
//   auto [tx, rx] = spindle::watch<config>(initial);
//   // the sender:                            // each receiver (a thread or a coroutine):
//   tx.send(next);                            while (rx.changed()) {
//   tx.send_modify([](config& c) { ... });      apply(*rx.borrow());
//                                             }
//                                             while (co_await rx.async_changed()) { ... }
//
// - watch<T>(initial) makes a move-only watch_sender<T> and a copyable watch_receiver<T>; more
//   receivers come from copies and from tx.subscribe().
// - Versions: every send, send_replace and send_modify (and a send_if_modified that says it
//   modified) replaces or changes the value and moves its version on. Each receiver remembers
//   the version it saw last: changed() waits until the version differs from it, then marks the
//   current version seen and returns `changed`. A receiver may skip intermediate versions by
//   design, but never misses the latest: after changed() returns, borrow() shows that version or
//   a newer one. Once the sender is gone and the receiver saw its last version, changed() returns
//   `closed`. A new receiver (a copy, or subscribe()) starts as having seen the current version;
//   a copy keeps the version its original saw.
// - Reading: borrow() returns a watch_ref<T>, a guard that holds the value's lock: the reader
//   sees one whole version, never a torn one, and no copy is made (T may be large). While a
//   guard lives the sender's next send waits for it, and other readers wait too (the lock is
//   exclusive): keep guards short, and copy the value out (`T copy = *rx.borrow();`) to keep
//   it. Sending or borrowing on a thread whose guard of the same watch is alive would wait for
//   itself: reported in every build. borrow_and_update() also marks the version it shows seen.
// - Waiting: changed() blocks, changed_for/changed_until/changed(stop_token) also end
//   `timed_out`/`cancelled`, co_await async_changed() and its timed and stop_token forms suspend
//   the coroutine, and on_changed(rx, f) is a select case beside channel cases. A newer version
//   that is there wins over an expired deadline or a requested stop.
// - send(v) with no receiver left fails and hands v back (`closed`), as tokio's send does;
//   send_replace, send_modify and send_if_modified always store.
//
// Protocol: the value under a lock, a version word beside it (detail/sync/watch_state.hpp); the
// receivers wait on one wait list as every spindle primitive does (detail/sync/event_case.hpp),
// all woken by each new version and by the sender's destruction. Model tests:
// tests/model/oneshot_watch_test.cpp and tests/model/pairs_oneshot_test.cpp.
// Happens-before: whatever the sender did before a send is visible to a receiver once its
// changed() returned for that version (or a later one), and to a borrow that shows it.
// Progress: a send takes the value's lock (it waits for readers' guards) and, when receivers
// wait, the wait list's; a waiting receiver spins briefly, then parks. Every receiver is woken
// by every version: a watch suits values that change less often than receivers read them.
// Thread safety: the sender is used by one thread at a time; each receiver handle too (copy it
// for each thread or coroutine: copies are cheap). A moved-from handle may only be destroyed or
// assigned to; any other use is reported in every build.
// Memory: one allocation per watch (the value, a lock, two words and a wait list).
// When not to use: a stream in which every value matters wants a channel; one value once, a
// oneshot.
// Examples: tests/watch_test.cpp (test `Watch.Example`).

#include <spindle/channel_result.hpp>
#include <spindle/detail/select/cases.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/deadline.hpp>
#include <spindle/detail/sync/event_case.hpp>
#include <spindle/detail/sync/watch_state.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

template <transferable T>
class watch_sender;
template <transferable T>
class watch_receiver;

/// How a wait for a newer version ended.
enum class watch_status : std::uint8_t {
  changed,    ///< a version the receiver had not seen is there (now marked seen)
  closed,     ///< the sender is gone and the receiver saw its last version
  timed_out,  ///< changed_for/changed_until only: no new version before the deadline
  cancelled   ///< changed(stop_token) only: stop was requested first
};

/// The outcome of a wait for a newer version.
struct [[nodiscard]] watch_result {
  watch_status status;

  explicit operator bool() const noexcept { return status == watch_status::changed; }
  [[nodiscard]] auto is_changed() const noexcept -> bool { return status == watch_status::changed; }
  [[nodiscard]] auto is_closed() const noexcept -> bool { return status == watch_status::closed; }
  [[nodiscard]] auto is_timed_out() const noexcept -> bool {
    return status == watch_status::timed_out;
  }
  [[nodiscard]] auto is_cancelled() const noexcept -> bool {
    return status == watch_status::cancelled;
  }
};

/// A read of a watch's value: holds the value's lock while it lives (see the file comment), so
/// the value it shows is one whole version. Move-only; destroy it on the thread that made it.
template <transferable T>
class watch_ref {
 public:
  watch_ref(watch_ref&& other) noexcept
      : state_(std::exchange(other.state_, nullptr)), changed_(other.changed_) {}
  auto operator=(watch_ref&&) -> watch_ref& = delete;
  watch_ref(watch_ref const&) = delete;
  auto operator=(watch_ref const&) -> watch_ref& = delete;
  ~watch_ref() {
    if (state_ != nullptr) {
      state_->unlock_guard();
    }
  }

  [[nodiscard]] auto operator*() const noexcept -> T const& { return state_->value(); }
  [[nodiscard]] auto operator->() const noexcept -> T const* { return &state_->value(); }
  [[nodiscard]] auto get() const noexcept -> T const& { return state_->value(); }
  /// Whether the version shown was one the receiver had not seen when it borrowed (always
  /// false for a sender's borrow).
  [[nodiscard]] auto has_changed() const noexcept -> bool { return changed_; }

 private:
  friend class watch_sender<T>;
  friend class watch_receiver<T>;
  watch_ref(detail::watch_state<T>* s, bool changed) noexcept : state_(s), changed_(changed) {}

  detail::watch_state<T>* state_;
  bool changed_;
};

namespace detail {
struct watch_access {
  template <class T, class... Args>
  static auto make_pair(Args&&... args) -> std::pair<watch_sender<T>, watch_receiver<T>> {
    auto* s = new watch_state<T>(std::in_place, std::forward<Args>(args)...);
    return {watch_sender<T>(s), watch_receiver<T>(s, 0)};
  }
  template <class T>
  static auto source_of(watch_receiver<T>& rx) noexcept -> watch_source<T> {
    return rx.source();
  }
};

template <class T, class... Extra>
class watch_changed_awaiter : public event_awaiter<watch_source<T>, Extra...> {
  using base = event_awaiter<watch_source<T>, Extra...>;

 public:
  using base::base;

  auto await_resume() -> watch_result {
    auto r = this->result();
    if (!r) {
      return watch_result{base::other == event_wait::cancelled ? watch_status::cancelled
                                                               : watch_status::timed_out};
    }
    return watch_result{*r ? watch_status::changed : watch_status::closed};
  }
};
}  // namespace detail

/// Makes a watch holding `initial` (version 0): the sender and a first receiver, which starts
/// as having seen version 0.
/// Throws: std::bad_alloc.
///
/// Returns: std::pair<watch_sender<T>, watch_receiver<T>> (deduced, so that a type that is not
/// transferable is reported as such rather than as a failure to name the handles).
template <transferable T>
auto watch(T initial) {
  return detail::watch_access::make_pair<T>(std::move(initial));
}

/// The sending side of a watch: move-only; its destruction closes the watch.
///
/// Thread safety: one thread at a time. A moved-from sender may only be destroyed or assigned
/// to; any other use is reported in every build.
template <transferable T>
class watch_sender {
 public:
  watch_sender(watch_sender&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  auto operator=(watch_sender&& other) noexcept -> watch_sender& {
    if (this != &other) {
      drop();
      state_ = std::exchange(other.state_, nullptr);
    }
    return *this;
  }
  watch_sender(watch_sender const&) = delete;
  auto operator=(watch_sender const&) -> watch_sender& = delete;
  /// Closes: receivers see `closed` once they saw the last version.
  ~watch_sender() { drop(); }

  /// Replaces the value with `value` and moves the version on: `sent`; or, with no receiver
  /// left, stores nothing and returns `closed` with the value handed back.
  auto send(T value) -> send_result<T> {
    if (get().receiver_count() == 0) {
      return send_result<T>{send_status::closed, std::optional<T>(std::move(value))};
    }
    send_replace(std::move(value));
    return send_result<T>{send_status::sent, std::nullopt};
  }

  /// Replaces the value with `value` whether or not anyone receives, moves the version on, and
  /// returns the value it replaced.
  auto send_replace(T value) -> T {
    std::optional<T> old;
    auto swap = [&old, &value](T& current) noexcept {
      old.emplace(std::move(current));
      std::destroy_at(&current);
      std::construct_at(&current, std::move(value));
    };
    static_cast<void>(get().modify(swap));
    return std::move(*old);
  }

  /// Runs `f(T&)` on the value under its lock and moves the version on, whether or not anyone
  /// receives. `f` must not borrow from or send on this watch.
  /// Throws: whatever `f` throws; the version moves on all the same (the value is whatever `f`
  /// left).
  template <class F>
  requires std::is_invocable_v<F&, T&>
  void send_modify(F f) {
    auto modify = [&f](T& current) { std::invoke(f, current); };
    static_cast<void>(get().modify(modify));
  }

  /// Runs `f(T&) -> bool` on the value under its lock; moves the version on (waking the
  /// receivers) only when `f` returns true. Returns what `f` returned.
  /// Throws: whatever `f` throws; the version then moves on.
  template <class F>
  requires std::is_invocable_r_v<bool, F&, T&>
  auto send_if_modified(F f) -> bool {
    return get().modify(f);
  }

  /// The current value, under its lock (see watch_ref).
  [[nodiscard]] auto borrow() const -> watch_ref<T> {
    static_cast<void>(get().lock_for_guard());
    return watch_ref<T>(state_, false);
  }

  /// A new receiver, which starts as having seen the current version.
  [[nodiscard]] auto subscribe() const -> watch_receiver<T> {
    auto& s = get();
    s.add_receiver();
    return watch_receiver<T>(&s, s.version_word() >> 1U);
  }

  /// How many receiver handles exist (a snapshot).
  [[nodiscard]] auto receiver_count() const noexcept -> std::size_t {
    return get().receiver_count();
  }
  /// True when no receiver is left (a snapshot; subscribe() makes one again).
  [[nodiscard]] auto is_closed() const noexcept -> bool { return receiver_count() == 0; }

 private:
  friend struct detail::watch_access;
  explicit watch_sender(detail::watch_state<T>* s) noexcept : state_(s) {}

  [[nodiscard]] auto get() const noexcept -> detail::watch_state<T>& {
    SPINDLE_CHECK(state_ != nullptr, "use of a moved-from spindle::watch_sender");
    return *state_;
  }
  void drop() noexcept {
    if (state_ != nullptr) {
      std::exchange(state_, nullptr)->drop_sender();
    }
  }

  detail::watch_state<T>* state_;
};

/// A receiving side of a watch: copyable; each copy remembers the version it saw last.
///
/// Thread safety: one thread (or coroutine, or select) at a time per handle; copies are
/// independent. A moved-from receiver may only be destroyed or assigned to; any other use is
/// reported in every build.
template <transferable T>
class watch_receiver {
 public:
  watch_receiver(watch_receiver const& other) noexcept : state_(&other.get()), seen_(other.seen_) {
    state_->add_receiver();
  }
  watch_receiver(watch_receiver&& other) noexcept
      : state_(std::exchange(other.state_, nullptr)), seen_(other.seen_) {}
  auto operator=(watch_receiver other) noexcept -> watch_receiver& {
    std::swap(state_, other.state_);
    std::swap(seen_, other.seen_);
    return *this;
  }
  ~watch_receiver() {
    if (state_ != nullptr) {
      std::exchange(state_, nullptr)->drop_receiver();
    }
  }

  /// The current value, under its lock (see watch_ref); does not mark it seen.
  [[nodiscard]] auto borrow() const -> watch_ref<T> {
    auto const v = get().lock_for_guard();
    return watch_ref<T>(state_, v != seen_);
  }

  /// As borrow(), and marks the version it shows seen.
  [[nodiscard]] auto borrow_and_update() -> watch_ref<T> {
    auto const v = get().lock_for_guard();
    bool const changed = v != seen_;
    seen_ = v;
    return watch_ref<T>(state_, changed);
  }

  /// Whether a version this receiver has not seen is there (a snapshot; marks nothing).
  [[nodiscard]] auto has_changed() const noexcept -> bool {
    return (get().version_word() >> 1U) != seen_;
  }

  /// True once the sender is gone (versions may still be unseen).
  [[nodiscard]] auto is_closed() const noexcept -> bool {
    return (get().version_word() & detail::watch_state<T>::closed) != 0;
  }

  /// Waits until a version this receiver has not seen is there and marks it seen: `changed`;
  /// or `closed` once the sender is gone and no version is unseen.
  auto changed() -> watch_result { return changed_at(std::nullopt, nullptr); }

  /// As changed(); also `cancelled` once stop is requested on `stop` first.
  auto changed(std::stop_token stop) -> watch_result { return changed_at(std::nullopt, &stop); }

  /// As changed(); also `timed_out` when `timeout` passed first (saturating as every timeout in
  /// the library).
  template <class Rep, class Period>
  auto changed_for(std::chrono::duration<Rep, Period> timeout) -> watch_result {
    return changed_at(detail::deadline_after(timeout), nullptr);
  }

  /// As changed(); also `timed_out` when `deadline` (on any clock) passed first.
  template <class Clock, class Duration>
  auto changed_until(std::chrono::time_point<Clock, Duration> deadline) -> watch_result {
    return changed_at(detail::to_steady(deadline), nullptr);
  }

  /// `co_await rx.async_changed()` -> watch_result: the coroutine form of changed().
  [[nodiscard]] auto async_changed() -> detail::watch_changed_awaiter<T> {
    return detail::watch_changed_awaiter<T>(source());
  }
  /// -> watch_result: as changed(stop).
  [[nodiscard]] auto async_changed(std::stop_token stop)
      -> detail::watch_changed_awaiter<T, detail::stop_case<detail::no_handler>> {
    return detail::watch_changed_awaiter<T, detail::stop_case<detail::no_handler>>(
        source(), detail::stop_case<detail::no_handler>(std::move(stop), {}));
  }
  /// -> watch_result: as changed_for(). The deadline is kept by the timer.
  template <class Rep, class Period>
  [[nodiscard]] auto async_changed_for(std::chrono::duration<Rep, Period> timeout)
      -> detail::watch_changed_awaiter<T, detail::timeout_case<detail::no_handler>> {
    return detail::watch_changed_awaiter<T, detail::timeout_case<detail::no_handler>>(
        source(), detail::timeout_case<detail::no_handler>(detail::deadline_after(timeout), {}));
  }
  /// -> watch_result: as changed_until().
  template <class Clock, class Duration>
  [[nodiscard]] auto async_changed_until(std::chrono::time_point<Clock, Duration> deadline)
      -> detail::watch_changed_awaiter<T, detail::timeout_case<detail::no_handler>> {
    return detail::watch_changed_awaiter<T, detail::timeout_case<detail::no_handler>>(
        source(), detail::timeout_case<detail::no_handler>(detail::to_steady(deadline), {}));
  }

 private:
  friend struct detail::watch_access;
  friend class watch_sender<T>;
  watch_receiver(detail::watch_state<T>* s, std::uint64_t seen) noexcept : state_(s), seen_(seen) {}

  [[nodiscard]] auto get() const noexcept -> detail::watch_state<T>& {
    SPINDLE_CHECK(state_ != nullptr, "use of a moved-from spindle::watch_receiver");
    return *state_;
  }
  [[nodiscard]] auto source() noexcept -> detail::watch_source<T> { return {&get(), &seen_}; }

  auto changed_at(std::optional<detail::steady_time> deadline, std::stop_token const* stop)
      -> watch_result {
    bool out = false;
    switch (detail::wait_event_until(source(), out, deadline, stop)) {
      case detail::event_wait::completed:
        break;
      case detail::event_wait::timed_out:
        return watch_result{watch_status::timed_out};
      case detail::event_wait::cancelled:
        return watch_result{watch_status::cancelled};
    }
    return watch_result{out ? watch_status::changed : watch_status::closed};
  }

  detail::watch_state<T>* state_;
  std::uint64_t seen_;
};

/// A select case chosen once `rx` has a version it has not seen (marked seen then), or once the
/// sender is gone and none is unseen: `f(bool)` gets true for a new version, false when closed.
template <class T, class F>
auto on_changed(watch_receiver<T>& rx, F f) -> detail::event_case<detail::watch_source<T>, F> {
  return detail::event_case<detail::watch_source<T>, F>(detail::watch_access::source_of(rx),
                                                        std::move(f));
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE
