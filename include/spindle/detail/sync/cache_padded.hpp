// SPDX-License-Identifier: BSL-1.0
#pragma once
// Alignment to the destructive-interference size, so that two values written by different
// threads never share a cache line (false sharing).

#include <spindle/detail/sync/config.hpp>

#include <cstddef>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

// 128 on x86-64 (the adjacent-line prefetcher pulls line pairs) and arm64 (128-byte lines on
// Apple cores). Not std::hardware_destructive_interference_size: its value follows -mtune, so
// two translation units could disagree, and g++ 12 warns when a header uses it.
#if defined(__x86_64__) || defined(__aarch64__)
inline constexpr std::size_t cache_line = 128;
#else
inline constexpr std::size_t cache_line = 64;
#endif

/// `T` alone on its own cache line(s).
template <class T>
struct alignas(cache_line) cache_padded {
  T value{};

  cache_padded() = default;
  template <class... Args>
  explicit cache_padded(std::in_place_t /*tag*/, Args&&... args)
      : value(std::forward<Args>(args)...) {}
};

static_assert(sizeof(cache_padded<char>) == cache_line);
static_assert(alignof(cache_padded<char>) == cache_line);

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
