// Tests for spindle/detail/channel/spread_layout.hpp: where a bounded channel's ring puts each
// position. Exhaustive over every capacity up to 4096 and every slot size a channel can have
// up to a whole line: the mapping must be a bijection of [0, capacity) (no two positions
// share a slot, no slot is left out), and consecutive spread positions must not share a
// 64-byte line of a ring that starts on a line boundary.
#include <spindle/detail/channel/spread_layout.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

using spindle::detail::spread_layout;

constexpr std::uint64_t max_capacity = 4096;
constexpr std::uint64_t line = spread_layout::line_bytes;

/// The first and last line that slot `s` of `slot_bytes` bytes touches.
struct lines {
  std::uint64_t first;
  std::uint64_t last;
};
auto lines_of(std::uint64_t s, std::uint64_t slot_bytes) -> lines {
  return {s * slot_bytes / line, ((s + 1) * slot_bytes - 1) / line};
}
auto share_a_line(lines a, lines b) -> bool {
  return a.first <= b.last && b.first <= a.last;
}

}  // namespace

TEST(SpreadLayout, Example) {
  // 16-byte slots: 4 to a line. 8 slots make 2 rows of 4 columns: index i sits at row i % 2,
  // column i / 2, so consecutive indices alternate between the two lines.
  spread_layout const layout(8, 16);
  EXPECT_EQ(layout.spread_count(), 8U);
  EXPECT_EQ(layout.columns(), 4U);
  std::vector<std::uint64_t> slots;
  for (std::uint64_t i = 0; i < 8; ++i) {
    slots.push_back(layout.slot_of(i));
  }
  EXPECT_EQ(slots, (std::vector<std::uint64_t>{0, 4, 1, 5, 2, 6, 3, 7}));
}

TEST(SpreadLayout, NotSpreadIsTheIdentity) {
  // What a ring gets where spread_pays() is false (one or two processors): slot i is index i.
  spread_layout const layout(1024, 16, /*spread=*/false);
  EXPECT_EQ(layout.spread_count(), 0U);
  EXPECT_EQ(layout.columns(), 1U);
  for (std::uint64_t i = 0; i < 1024; ++i) {
    ASSERT_EQ(layout.slot_of(i), i);
  }
}

TEST(SpreadLayout, TheTailBeyondRowsTimesColumnsStaysInPlace) {
  // 11 slots of 16 bytes: 2 rows of 4 are spread, the last 3 indices keep their place.
  spread_layout const layout(11, 16);
  EXPECT_EQ(layout.spread_count(), 8U);
  for (std::uint64_t i = 8; i < 11; ++i) {
    EXPECT_EQ(layout.slot_of(i), i);
  }
}

TEST(SpreadLayout, NothingIsSpreadWhenFewerThanTwoRowsOrColumnsFit) {
  for (std::uint64_t capacity : {1U, 3U, 7U}) {  // fewer than 2 rows of 4
    EXPECT_EQ(spread_layout(capacity, 16).spread_count(), 0U) << capacity;
  }
  for (std::size_t slot_bytes : {40U, 48U, 56U, 64U, 72U}) {  // fewer than 2 slots to a line
    EXPECT_EQ(spread_layout(max_capacity, slot_bytes).spread_count(), 0U) << slot_bytes;
    EXPECT_EQ(spread_layout(max_capacity, slot_bytes).columns(), 1U) << slot_bytes;
  }
}

/// Every capacity from 1 to 4096, every slot size that matters: a bijection, and the spread
/// part covers at least half the ring whenever anything is spread.
TEST(SpreadLayout, EveryIndexMapsToItsOwnSlot) {
  for (std::size_t slot_bytes : {8U, 16U, 24U, 32U, 48U, 64U}) {
    for (std::uint64_t capacity = 1; capacity <= max_capacity; ++capacity) {
      spread_layout const layout(capacity, slot_bytes);
      ASSERT_LE(layout.spread_count(), capacity) << slot_bytes << " x " << capacity;
      if (layout.spread_count() != 0) {
        ASSERT_GT(2 * layout.spread_count(), capacity) << slot_bytes << " x " << capacity;
      }
      std::vector<bool> taken(capacity, false);
      for (std::uint64_t i = 0; i < capacity; ++i) {
        auto const s = layout.slot_of(i);
        ASSERT_LT(s, capacity) << slot_bytes << " x " << capacity << ", index " << i;
        ASSERT_FALSE(taken[s]) << slot_bytes << " x " << capacity << ", index " << i;
        taken[s] = true;
      }
    }
  }
}

/// For slot sizes that divide the line, consecutive spread indices never share a line.
TEST(SpreadLayout, ConsecutiveSpreadIndicesLandOnDifferentLines) {
  for (std::size_t slot_bytes : {8U, 16U, 32U, 48U, 64U}) {
    for (std::uint64_t capacity = 1; capacity <= max_capacity; ++capacity) {
      spread_layout const layout(capacity, slot_bytes);
      for (std::uint64_t i = 0; i + 1 < layout.spread_count(); ++i) {
        ASSERT_FALSE(share_a_line(lines_of(layout.slot_of(i), slot_bytes),
                                  lines_of(layout.slot_of(i + 1), slot_bytes)))
            << slot_bytes << " x " << capacity << ", index " << i;
      }
    }
  }
}

/// A 24-byte slot does not divide the line: two go to a 48-byte row, and a slot may straddle
/// two lines. Down a column, consecutive spread indices are one row (48 bytes) apart: never
/// neighbours, but half of them share a line (4 of every 8 slot offsets in a 192-byte
/// period). From the bottom of one column to the top of the next they share no line, except
/// in a ring of only two rows (capacity 4 to 7), where the two are neighbours.
TEST(SpreadLayout, TwentyFourByteSlotsAreOneRowApartDownAColumn) {
  constexpr std::uint64_t slot_bytes = 24;
  for (std::uint64_t capacity = 1; capacity <= max_capacity; ++capacity) {
    spread_layout const layout(capacity, slot_bytes);
    if (layout.spread_count() == 0) {
      continue;
    }
    ASSERT_EQ(layout.columns(), 2U);
    auto const rows = layout.spread_count() / layout.columns();
    std::uint64_t column_pairs = 0;
    std::uint64_t sharing = 0;
    for (std::uint64_t i = 0; i + 1 < layout.spread_count(); ++i) {
      auto const a = layout.slot_of(i);
      auto const b = layout.slot_of(i + 1);
      bool const shared = share_a_line(lines_of(a, slot_bytes), lines_of(b, slot_bytes));
      if ((i + 1) % rows != 0) {
        ASSERT_EQ(b, a + layout.columns()) << capacity << ", index " << i;
        ++column_pairs;
        sharing += shared ? 1 : 0;
      } else {
        ASSERT_EQ(shared, rows == 2) << capacity << ", index " << i;
      }
    }
    ASSERT_LE(2 * sharing, column_pairs + 2) << capacity;
  }
}
