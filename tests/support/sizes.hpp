#pragma once
// How much work a test does in this build: the one place that detects the sanitizers and says
// by how much a test shrinks under them. ThreadSanitizer runs thread-heavy tests 5 to 20 times
// slower (it checks every atomic and every plain access against the others); AddressSanitizer
// costs about twice the time, which the full sizes absorb.
//
// A test picks its divisor for its own workload and writes its sizes as `full / divisor`:
//   constexpr int scale = spindle_test::tsan_divisor(10);
//   int const rounds = 300 / scale;

#include <spindle/detail/sync/config.hpp>

#include <concepts>

namespace spindle_test {

/// Whether this test is built with ThreadSanitizer (-fsanitize=thread).
#if defined(SPINDLE_TSAN)
inline constexpr bool under_thread_sanitizer = true;
#else
inline constexpr bool under_thread_sanitizer = false;
#endif

/// Whether this test is built with AddressSanitizer (-fsanitize=address): GCC defines
/// __SANITIZE_ADDRESS__, clang answers __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool under_address_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool under_address_sanitizer = true;
#else
inline constexpr bool under_address_sanitizer = false;
#endif
#else
inline constexpr bool under_address_sanitizer = false;
#endif

/// What a test divides its sizes by in this build: `divisor` under ThreadSanitizer, 1 otherwise.
///
/// Preconditions: divisor > 0, and every full size is a multiple of it or may round down.
template <std::integral Int>
constexpr auto tsan_divisor(Int divisor) -> Int {
  return under_thread_sanitizer ? divisor : Int{1};
}

}  // namespace spindle_test
