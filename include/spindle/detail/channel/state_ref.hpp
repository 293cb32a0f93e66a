// SPDX-License-Identifier: BSL-1.0
#pragma once
// One handle's counted reference to a channel_state: the copy, move, assignment and
// destruction that sender<T> and receiver<T> share, templated on the side whose count it
// holds. The counts and what their last release does are channel_state's. A sender's
// reference also carries its lane (channel_state::acquire_sender): the copy takes a lane of
// its own, a move takes it along.

#include <spindle/detail/channel/channel_state.hpp>
#include <spindle/detail/sync/config.hpp>

#include <cstdint>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// Which handle count a state_ref holds.
enum class channel_side : std::uint8_t { sender, receiver };

/// A counted reference to a channel_state: a copy takes another count of its side, a move
/// takes the count along and leaves null behind, destruction drops the count.
///
/// Thread safety: as the handle that holds it: copies on any threads, but assignment and
/// destruction of one state_ref do not race with its other uses.
template <class T, channel_side Side>
class state_ref {
 public:
  /// Adopts one count of `state` (a channel just made, see channel_access).
  explicit state_ref(channel_state<T>* state) noexcept : state_(state) {}

  state_ref(state_ref const& other) noexcept : state_(other.state_) {
    if (state_ == nullptr) {
      return;
    }
    if constexpr (Side == channel_side::sender) {
      lane_ = state_->acquire_sender();
    } else {
      state_->acquire_receiver();
    }
  }
  state_ref(state_ref&& other) noexcept
      : state_(std::exchange(other.state_, nullptr)), lane_(other.lane_) {}
  /// Copy and move assignment in one: `other` is a copy (or the moved value), and drops the
  /// old count when it goes.
  auto operator=(state_ref other) noexcept -> state_ref& {
    std::swap(state_, other.state_);
    std::swap(lane_, other.lane_);
    return *this;
  }
  ~state_ref() {
    if (state_ == nullptr) {
      return;
    }
    if constexpr (Side == channel_side::sender) {
      channel_state<T>::release_sender(state_);
    } else {
      channel_state<T>::release_receiver(state_);
    }
  }

  /// The channel. A moved-from reference is a misuse, reported in every build.
  [[nodiscard]] auto get() const noexcept -> channel_state<T>& {
    SPINDLE_CHECK(state_ != nullptr, Side == channel_side::sender
                                         ? "use of a moved-from spindle::sender"
                                         : "use of a moved-from spindle::receiver");
    return *state_;
  }

  /// The sender handle's lane (always 0 for a receiver's reference).
  [[nodiscard]] auto lane() const noexcept -> send_lane { return lane_; }

 private:
  // Null exactly when moved from.
  channel_state<T>* state_;
  // The first handle of a channel has lane 0; copies take theirs from acquire_sender().
  send_lane lane_ = 0;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
