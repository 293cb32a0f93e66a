// SPDX-License-Identifier: BSL-1.0
#pragma once
// Where a bounded channel's ring puts each position: consecutive positions on different cache
// lines, so that two receivers taking neighbouring positions, or two senders, write different
// lines instead of passing one back and forth. The shared positions head_ and tail_ are then
// the only lines same-side threads still contend on.
//
// The ring is laid out column by column: with `columns` slots to a 64-byte line and `rows` a
// power of two, index i sits at row i % rows, column i / rows (a mask, two shifts and an or),
// so the slots of one line are `rows` positions apart. When the capacity is not
// `rows * columns`, the last indices (at most about half) stay in place, so the ring holds
// exactly `capacity` slots. atomic_queue remaps its indices for the same reason
// (max0x7ba/atomic_queue, include/atomic_queue/atomic_queue.h, `remap_index`).
//
// What it guarantees, in slot units from the start of the ring: the mapping is a bijection of
// [0, capacity); for a slot size that divides the line (8, 16, 32 bytes), consecutive spread
// indices lie on different lines of a ring that starts on a line boundary. A 24-byte slot gets
// two columns, so consecutive indices down a column are 48 bytes apart: not neighbours, but
// half of those pairs share a line (a 24-byte slot may straddle two). Slots of more than 32
// bytes are not spread (fewer than two fit a line).
// Spreading costs the side that streams through the ring alone (one sender, one receiver)
// the messages a line used to carry across at once; it is meant for several threads working on
// the same side at the same moment, on different processors.
//
// When a ring spreads (`spread_pays`): only where the process may use more than two
// processors. On two, at most two threads run at any moment, and with more handles than
// processors they take turns: a thread that runs streams through consecutive positions, and a
// line of four 16-byte slots carries four messages for one transfer. There the contiguous ring
// moved twice the messages of the spread one in every throughput scenario, 1P/1C to 4P/2C
// (docs/performance.md, "Contiguous rings on two processors"). Where more threads of one side run
// at once, the neighbouring slots of a contiguous ring are written by different processors in
// turn, the case atomic_queue's remapping is for; that side is not measured yet.

#include <spindle/detail/channel/tuning.hpp>
#include <spindle/detail/sync/available_cpus.hpp>
#include <spindle/detail/sync/config.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// The fewest processors the process must be allowed to use for a new ring to spread.
inline constexpr std::size_t spread_min_cpus = channel_tuning::spread_min_cpus;

/// Whether a ring made now should spread its slots (see the file comment): the process may use
/// at least spread_min_cpus processors.
inline auto spread_pays() noexcept -> bool {
  return available_cpus() >= spread_min_cpus;
}

/// The index-to-slot mapping of a ring of `capacity` slots of `slot_bytes` bytes each: spread
/// when `spread` (and the slots are small enough), the identity otherwise.
class spread_layout {
 public:
  /// The line size spreading is measured in: 64 bytes, not cache_line's 128 (which counts the
  /// adjacent-line prefetcher's pairs): spreading over pairs of lines was slower.
  static constexpr std::size_t line_bytes = 64;

  /// Preconditions: slot_bytes > 0.
  constexpr spread_layout(std::uint64_t capacity, std::size_t slot_bytes,
                          bool spread = true) noexcept {
    if (!spread) {
      return;
    }
    // bit_floor: the mask and shifts need a power of two. For slot sizes that are multiples
    // of 8 (a channel slot starts with an 8-byte stamp) the quotient already is one or
    // rounds down to one.
    auto const columns = std::bit_floor(static_cast<std::uint64_t>(line_bytes / slot_bytes));
    if (columns < 2) {
      return;
    }
    auto const rows = std::bit_floor(capacity / columns);
    if (rows < 2) {
      return;
    }
    count_ = rows * columns;
    row_mask_ = rows - 1;
    column_bits_ = static_cast<unsigned>(std::countr_zero(columns));
    row_bits_ = static_cast<unsigned>(std::countr_zero(rows));
  }

  /// The slot of index `index`. Preconditions: index < capacity.
  [[nodiscard]] constexpr auto slot_of(std::uint64_t index) const noexcept -> std::uint64_t {
    auto const spread_index = ((index & row_mask_) << column_bits_) | (index >> row_bits_);
    return index < count_ ? spread_index : index;
  }

  /// How many leading indices are spread (rows * columns); 0 when none are.
  [[nodiscard]] constexpr auto spread_count() const noexcept -> std::uint64_t { return count_; }
  /// Slots to a line in the spread part; 1 when nothing is spread.
  [[nodiscard]] constexpr auto columns() const noexcept -> std::uint64_t {
    return std::uint64_t{1} << column_bits_;
  }

 private:
  // INVARIANT: count_ == 0, or count_ == (row_mask_ + 1) << column_bits_ with
  // row_mask_ + 1 == 1 << row_bits_, and count_ <= capacity.
  std::uint64_t count_ = 0;
  std::uint64_t row_mask_ = 0;
  unsigned column_bits_ = 0;
  unsigned row_bits_ = 0;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
