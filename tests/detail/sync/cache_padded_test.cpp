// detail::cache_padded: each value on its own cache line(s).
#include <spindle/detail/sync/cache_padded.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

using spindle::detail::cache_line;
using spindle::detail::cache_padded;

TEST(CachePadded, Example) {
  struct indices {
    cache_padded<std::uint64_t> head;
    cache_padded<std::uint64_t> tail;
  };
  indices i;
  auto const distance = reinterpret_cast<char*>(&i.tail) - reinterpret_cast<char*>(&i.head);
  EXPECT_GE(static_cast<std::size_t>(distance), cache_line);
  static_assert(sizeof(indices) == 2 * cache_line);
}

TEST(CachePadded, ConstructsInPlace) {
  cache_padded<std::pair<int, int>> p(std::in_place, 1, 2);
  EXPECT_EQ(p.value.first, 1);
  EXPECT_EQ(p.value.second, 2);
}
