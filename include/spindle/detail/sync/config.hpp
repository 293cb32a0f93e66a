// SPDX-License-Identifier: BSL-1.0
#pragma once
// Build switches and architecture detection, in one place.
//
// SPINDLE_ENABLE_ASSERTS  turns SPINDLE_ASSERT into a checked abort (tests define it).
// SPINDLE_MODEL_CHECK     replaces the atomic alias with the model checker's (tests/model)
//                         and moves every name into another inline namespace (below).
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

// The inline namespace that holds every name the library declares: spindle::sender<T> is
// spindle::abi_v1::sender<T>, spelled spindle::sender<T> in code. A SPINDLE_MODEL_CHECK build
// gives every structure another layout and other code (the model checker's atomics), so it gets
// another namespace, abi_v1_model: a translation unit built with the switch and one built
// without it can be linked into one program without two definitions of, say,
// sender<int>::send() under one mangled name, where the linker would keep one and silently run
// it in both (an ODR violation no tool reports). Every header opens
// `namespace spindle::inline SPINDLE_ABI_NAMESPACE` (tests/abi checks it). The model checker's
// own namespace, spindle::model, is the same in every build and stays outside.
#if defined(SPINDLE_MODEL_CHECK)
#define SPINDLE_ABI_NAMESPACE abi_v1_model
#else
#define SPINDLE_ABI_NAMESPACE abi_v1
#endif

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

[[noreturn]] inline void assert_failed(char const* expr, char const* file, int line,
                                       char const* msg) noexcept {
  std::fprintf(stderr, "spindle: assertion failed: %s (%s) at %s:%d\n", expr, msg, file, line);
  std::abort();
}

/// Reports a misuse of the API that no build may let through (a moved-from handle, a
/// second concurrent waiter where one is allowed): prints `what` and aborts. Kept out of line
/// and cold so that the check at the call site costs one predictable branch.
[[noreturn, gnu::cold, gnu::noinline]] inline void misuse(char const* what) noexcept {
  std::fprintf(stderr, "spindle: misuse: %s\n", what);
  std::abort();
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail

/// Marks a short function on a hot path that the optimiser must inline: the owner's push and
/// pop of a work-stealing deque, which fork-join runs once per fork. Left to itself, g++ -O3
/// spends its inlining budget on the user's recursion instead and calls them out of line,
/// which made fib(30) with join slower at -O3 than at -O2 (docs/performance.md, "Fork-join fast
/// path").
#define SPINDLE_ALWAYS_INLINE [[gnu::always_inline]] inline

/// Checks a precondition or invariant in builds with SPINDLE_ENABLE_ASSERTS; aborts with a
/// message when it fails. Never an optimiser assumption: in other builds the expression is not
/// evaluated at all.
#if defined(SPINDLE_ENABLE_ASSERTS)
#define SPINDLE_ASSERT(expr, msg) \
  ((expr) ? static_cast<void>(0) : ::spindle::detail::assert_failed(#expr, __FILE__, __LINE__, msg))
#else
#define SPINDLE_ASSERT(expr, msg) static_cast<void>(0)
#endif

/// Checks a precondition in every build, not only with SPINDLE_ENABLE_ASSERTS: for misuse
/// that would otherwise crash, hang or corrupt memory (a moved-from handle, a second waiter).
/// Costs one predictable branch; the failure path is detail::misuse (message, then abort).
#define SPINDLE_CHECK(expr, msg)                                       \
  (__builtin_expect(static_cast<bool>(expr), 1) ? static_cast<void>(0) \
                                                : ::spindle::detail::misuse(msg))
