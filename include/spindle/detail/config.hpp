#pragma once
// Build switches and architecture detection, in one place.
//
// SPINDLE_ENABLE_ASSERTS  turns SPINDLE_ASSERT into a checked abort (tests define it).
// SPINDLE_MODEL_CHECK     replaces the atomic alias with the model checker's (tests/model).
// SPINDLE_TSAN            set here when compiling under ThreadSanitizer.

#include <cstdio>
#include <cstdlib>

#if defined(__SANITIZE_THREAD__)
#define SPINDLE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SPINDLE_TSAN 1
#endif
#endif

#if defined(__x86_64__) || defined(__i386__)
#define SPINDLE_ARCH_X86 1
#elif defined(__aarch64__) || defined(__arm__)
#define SPINDLE_ARCH_ARM 1
#endif

namespace spindle::detail {

[[noreturn]] inline void assert_failed(char const* expr, char const* file, int line,
                                       char const* msg) noexcept {
  std::fprintf(stderr, "spindle: assertion failed: %s (%s) at %s:%d\n", expr, msg, file, line);
  std::abort();
}

}  // namespace spindle::detail

/// Checks a precondition or invariant in builds with SPINDLE_ENABLE_ASSERTS; aborts with a
/// message when it fails. Never an optimiser assumption: in other builds the expression is not
/// evaluated at all.
#if defined(SPINDLE_ENABLE_ASSERTS)
#define SPINDLE_ASSERT(expr, msg)                                                         \
  ((expr) ? static_cast<void>(0)                                                          \
          : ::spindle::detail::assert_failed(#expr, __FILE__, __LINE__, msg))
#else
#define SPINDLE_ASSERT(expr, msg) static_cast<void>(0)
#endif
