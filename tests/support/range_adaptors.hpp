#pragma once
// Test support: SPINDLE_TEST_RANGE_ADAPTORS says whether this compiler can build libstdc++'s
// range adaptors. clang before 16 cannot (`v | std::views::take(1)` over a std::vector fails
// too), so the tests that use them need g++ or a newer clang.

#if defined(__clang__) && defined(__GLIBCXX__) && __clang_major__ < 16
#define SPINDLE_TEST_RANGE_ADAPTORS 0
#else
#define SPINDLE_TEST_RANGE_ADAPTORS 1
#endif
