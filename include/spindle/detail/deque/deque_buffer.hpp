// SPDX-License-Identifier: BSL-1.0
#pragma once
// The circular slot array of the Chase-Lev deque (see <spindle/deque.hpp>).
//
// A buffer is a power-of-two array of `detail::atomic<T>` slots addressed by the deque's
// unbounded signed 64-bit indices modulo the capacity. Slots are atomics, accessed relaxed,
// because a thief reads a slot speculatively before its CAS on `top` decides whether the read
// counts; as a plain object that read would race with the owner's next write to the slot.
// Every slot is constructed when the buffer is, so no later write ever constructs an object
// another thread may be reading.
//
// A buffer never changes size. The deque grows by copying its live range into a buffer twice
// as large (`grown`), publishing the new one and retiring the old one; retired buffers stay
// allocated until the deque dies, so a thief that still holds a pointer to one reads memory
// that is alive and whose live slots still hold the values they held when it was retired.

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// A fixed-capacity ring of atomic slots indexed by unbounded signed positions.
///
/// Synchronization: the buffer itself holds no index. The deque's owner is the only writer
/// of slots; thieves read them. Who may read which slot, and when a read counts, is decided by
/// the deque's `top`/`bottom` protocol; each access here is relaxed and the deque names the
/// release/acquire pair that orders it.
template <class T>
class deque_buffer {
 public:
  /// Allocates `capacity` slots, each holding the all-zero bit pattern of T (never observed:
  /// a slot is read only at a position the owner has written).
  ///
  /// Preconditions: `capacity` is a power of two.
  /// Throws: std::bad_alloc.
  explicit deque_buffer(std::size_t capacity)
      : mask_(capacity - 1), slots_(allocator{}.allocate(capacity)) {
    SPINDLE_ASSERT(std::has_single_bit(capacity), "deque buffer capacity is a power of two");
    auto const blank = std::bit_cast<T>(std::array<unsigned char, sizeof(T)>{});
    for (std::size_t i = 0; i < capacity; ++i) {
      // SAFETY: slots_ points to `capacity` uninitialised atomic<T> objects just allocated;
      // each is constructed exactly once here and destroyed in the destructor.
      ::new (static_cast<void*>(slots_ + i)) atomic<T>(blank);
    }
    // The header is plain memory that every reader of a slot reads (slot()): for the model
    // checker's race detector it is written here, so a buffer published to thieves without a
    // release/acquire pair (grow's store of the buffer pointer) is a reported race.
    note_write(this, sizeof *this);
  }

  deque_buffer(deque_buffer const&) = delete;
  auto operator=(deque_buffer const&) -> deque_buffer& = delete;

  ~deque_buffer() {
    // SAFETY: the deque destroys a buffer only when its last handle is gone, so no thread
    // can still read a slot; every slot was constructed in the constructor.
    std::destroy_n(slots_, capacity());
    allocator{}.deallocate(slots_, capacity());
  }

  [[nodiscard]] auto capacity() const noexcept -> std::size_t { return mask_ + 1; }

  /// Reads the slot of position `index`.
  [[nodiscard]] auto load(std::int64_t index) const noexcept -> T {
    // relaxed: the deque orders this read (acquire of bottom/buffer before it, CAS of top
    // after it deciding whether it counts); see worker::pop and stealer::steal.
    return slot(index).load(std::memory_order_relaxed);
  }

  /// Writes the slot of position `index`. Owner only.
  void store(std::int64_t index, T value) noexcept {
    // relaxed: published by the owner's release store of bottom (push) or of the buffer
    // pointer (grow), which every reader acquires before reading this slot.
    slot(index).store(value, std::memory_order_relaxed);
  }

  /// A buffer of twice the capacity holding the positions [top, bottom) of this one.
  ///
  /// Preconditions: called by the owner; 0 <= bottom - top <= capacity().
  /// Throws: std::bad_alloc (this buffer is unchanged).
  [[nodiscard]] auto grown(std::int64_t top, std::int64_t bottom) const
      -> std::unique_ptr<deque_buffer> {
    auto next = std::make_unique<deque_buffer>(capacity() * 2);
    for (auto i = top; i < bottom; ++i) {
      next->store(i, load(i));
    }
    return next;
  }

 private:
  using allocator = std::allocator<atomic<T>>;

  [[nodiscard]] auto slot(std::int64_t index) const noexcept -> atomic<T>& {
    note_read(this, sizeof *this);
    return slots_[static_cast<std::size_t>(index) & mask_];
  }

  std::size_t mask_;  // INVARIANT: capacity - 1, capacity a power of two; never changes.
  atomic<T>* slots_;  // INVARIANT: capacity constructed slots, owned by this buffer.
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
