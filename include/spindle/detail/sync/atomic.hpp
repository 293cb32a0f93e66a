// SPDX-License-Identifier: BSL-1.0
#pragma once
// The atomic alias, fences, and the futex-style wait/wake every blocking path goes through.
//
// Every atomic shared between threads in spindle is a `detail::atomic<T>`, every thread fence
// is `detail::fence_seq_cst()`, every sleep is `detail::futex_wait*` and every spin step is
// `detail::spin_pause()` or `detail::thread_yield()`. This is the only file that names
// std::atomic. In a normal build each of these is the standard facility at zero cost; with
// SPINDLE_MODEL_CHECK defined they are the instrumented versions from
// <spindle/model/atomic.hpp>, which yield to a deterministic scheduler before each operation
// so tests can explore and replay thread interleavings.
//
// Fences. ThreadSanitizer does not model std::atomic_thread_fence (and GCC 12 rejects it under
// -fsanitize=thread with -Werror=tsan), so the library uses no acquire or release fences at
// all: it uses release stores and acquire loads instead. The one fence it needs, seq_cst (the
// store->load barrier of Dekker-style protocols), is a seq_cst read-modify-write on a
// thread-private word under TSan: a full barrier on the fence's own thread, and TSan sees no
// edge to other threads, so it cannot hide a real race.
//
// Asymmetric fences. A Dekker pair whose one side runs on every message and whose other side
// runs only before a thread goes to sleep can put the whole cost of the store->load barrier on
// the rare side: `light_fence()` on the common side is a compiler barrier, and `heavy_fence()`
// on the rare side makes every running thread of the process execute a full barrier
// (membarrier(2), MEMBARRIER_CMD_PRIVATE_EXPEDITED), which together order as two seq_cst
// fences would (D. Dice, H. Huang, M. Yang, "Asymmetric Dekker Synchronization", 2001; Linux
// uses the same pairing between membarrier and the barriers of its scheduler). The heavy side
// costs a system call and an interrupt per other CPU (tens of microseconds on a virtual
// machine: docs/design.md, "Floor 1"), so it belongs only
// next to a sleep. Where the kernel refuses the command (no membarrier, a seccomp filter),
// asymmetric_fences() is false and both sides are fence_seq_cst(). Under the model checker the
// heavy side drains every thread's store buffer (model::heavy_fence) and the light side is
// nothing, so a missing heavy fence shows up as a lost wake-up in x86-TSO mode.
//
// Payload race hooks. `note_read`/`note_write` mark plain (non-atomic) accesses to shared
// payload storage. They compile to nothing outside model checking; under the model checker
// they feed its vector-clock race detector, so a missing release/acquire pair on a slot is
// reported even on x86, where the hardware would never show it.
//
// Threads. Code that starts threads of its own (the executor's workers) starts them as
// `detail::os_thread`: std::thread normally, and under the model checker a
// `spindle::model::thread`, which the scheduler runs like any other thread of the execution
// (the scheduler cannot see a std::thread). Only the common part may be used: construction
// from a callable and join(); a model::thread can be neither copied nor moved, so hold it by
// std::unique_ptr (or in a container that never moves its elements).

#include <spindle/detail/sync/config.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#if defined(SPINDLE_MODEL_CHECK)
#include <spindle/model/atomic.hpp>
#else
#if defined(__linux__)
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <climits>
#include <ctime>
#endif
#endif

#if defined(SPINDLE_ARCH_X86) && !defined(SPINDLE_MODEL_CHECK)
#include <immintrin.h>
#endif

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

using steady_time = std::chrono::steady_clock::time_point;

#if defined(SPINDLE_MODEL_CHECK)

template <class T>
using atomic = ::spindle::model::atomic<T>;

using os_thread = ::spindle::model::thread;

// seq_cst: the model's fence; pairs as the fence it stands for does.
inline void fence_seq_cst() noexcept {
  ::spindle::model::fence(std::memory_order_seq_cst);
}
inline auto asymmetric_fences() noexcept -> bool {
  return true;
}
inline void light_fence(bool /*asymmetric*/) noexcept {}
inline void heavy_fence(bool /*asymmetric*/) noexcept {
  ::spindle::model::heavy_fence();
}
inline void spin_pause() noexcept {
  ::spindle::model::spin_pause();
}
inline void thread_yield() noexcept {
  ::spindle::model::thread_yield();
}
inline void prefetch_for_write(void const* p) noexcept {
  ::spindle::model::prefetch_for_write(p);
}
inline void futex_wait(atomic<std::uint32_t>& word, std::uint32_t expected) noexcept {
  ::spindle::model::futex_wait(word, expected);
}
inline auto futex_wait_until(atomic<std::uint32_t>& word, std::uint32_t expected,
                             steady_time deadline) noexcept -> bool {
  return ::spindle::model::futex_wait_until(word, expected, deadline);
}
inline void futex_wake_one(atomic<std::uint32_t>& word) noexcept {
  ::spindle::model::futex_wake_one(word);
}
inline void futex_wake_all(atomic<std::uint32_t>& word) noexcept {
  ::spindle::model::futex_wake_all(word);
}
inline void note_read(void const* addr, std::size_t size) noexcept {
  ::spindle::model::note_read(addr, size);
}
inline void note_write(void const* addr, std::size_t size) noexcept {
  ::spindle::model::note_write(addr, size);
}

#else

template <class T>
using atomic = std::atomic<T>;

/// A thread the library starts; see "Threads" in the file comment.
using os_thread = std::thread;

/// A full store->load barrier: no load after it may be satisfied before every store before it
/// is visible to all threads. Callers name the fence or seq_cst operation it pairs with.
inline void fence_seq_cst() noexcept {
#if defined(SPINDLE_TSAN)
  // seq_cst: stands in for the fence under TSan, see the file comment. The word is private to
  // the thread, so the RMW is a full barrier here without giving TSan a happens-before edge
  // between threads that the real fence would not create.
  thread_local std::atomic<std::uint64_t> word{0};
  word.fetch_add(0, std::memory_order_seq_cst);
#else
  // seq_cst: the fence itself; each caller names the fence or operation it pairs with.
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

/// Whether heavy_fence() can be the asymmetric one (see the file comment): registers the
/// process for MEMBARRIER_CMD_PRIVATE_EXPEDITED on the first call and remembers the answer.
inline auto asymmetric_fences() noexcept -> bool {
#if defined(__linux__) && defined(SYS_membarrier)
  static bool const available =
      ::syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  return available;
#else
  return false;
#endif
}

/// The common side of an asymmetric pair: orders the caller's earlier stores before its later
/// loads against a heavy_fence() on another thread. `asymmetric`: what asymmetric_fences()
/// said when the structure was made; without it this is fence_seq_cst().
inline void light_fence(bool asymmetric) noexcept {
  if (asymmetric) {
    // seq_cst signal fence: a compiler barrier only; the heavy side supplies the CPU barrier.
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } else {
    fence_seq_cst();
  }
}

/// The rare side of an asymmetric pair: every thread of the process that is running executes
/// a full barrier before this returns (threads not running pass one when they are switched
/// in), and so does the caller.
inline void heavy_fence(bool asymmetric) noexcept {
#if defined(__linux__) && defined(SYS_membarrier)
  if (asymmetric) {
    ::syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    return;
  }
#endif
  static_cast<void>(asymmetric);
  fence_seq_cst();
}

/// One step of a busy-wait: tells the CPU we are spinning (PAUSE on x86, YIELD on arm).
inline void spin_pause() noexcept {
#if defined(SPINDLE_ARCH_X86)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

/// Gives the rest of this time slice to another runnable thread.
inline void thread_yield() noexcept {
  std::this_thread::yield();
}

/// Asks for the cache line at `p` in exclusive state, ahead of a load that will be followed
/// by a store to the same line: one ownership transfer instead of a shared copy and then an
/// upgrade. A hint with no effect on the memory model (PREFETCHW on x86; a no-op elsewhere).
inline void prefetch_for_write(void const* p) noexcept {
#if defined(SPINDLE_ARCH_X86)
  // PREFETCHW needs no CPU flag to assemble and decodes as a NOP where it is not supported.
  asm volatile("prefetchw %0" : : "m"(*static_cast<char const*>(p)));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

#if defined(__linux__)
static_assert(sizeof(atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                  atomic<std::uint32_t>::is_always_lock_free,
              "futex words must be plain 32-bit words");

inline auto futex_word(atomic<std::uint32_t>& word) noexcept -> std::uint32_t* {
  // SAFETY: std::atomic<uint32_t> is lock-free and has the size of uint32_t (asserted above);
  // the kernel only compares and sleeps on the address, it never writes through it.
  return reinterpret_cast<std::uint32_t*>(&word);
}
#endif

/// Sleeps while `word == expected`. May return spuriously; callers re-check in a loop.
/// The comparison is atomic with going to sleep, so a wake that follows a change of `word`
/// is never lost.
inline void futex_wait(atomic<std::uint32_t>& word, std::uint32_t expected) noexcept {
#if defined(__linux__)
  ::syscall(SYS_futex, futex_word(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
#else
  // relaxed: the comparison only decides whether to sleep; callers re-check with their own
  // ordering after waking.
  word.wait(expected, std::memory_order_relaxed);
#endif
}

/// As futex_wait, but gives up at `deadline`. Returns false when the deadline has passed.
inline auto futex_wait_until(atomic<std::uint32_t>& word, std::uint32_t expected,
                             steady_time deadline) noexcept -> bool {
  auto const now = std::chrono::steady_clock::now();
  if (now >= deadline) {
    return false;
  }
#if defined(__linux__)
  // steady_clock is CLOCK_MONOTONIC on Linux, which FUTEX_WAIT_BITSET uses for its absolute
  // timeout, so the deadline needs no conversion and no drift accumulates across retries.
  auto const since_epoch = deadline.time_since_epoch();
  auto const secs = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(secs.count());
  ts.tv_nsec = static_cast<long>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch - secs).count());
  ::syscall(SYS_futex, futex_word(word), FUTEX_WAIT_BITSET_PRIVATE, expected, &ts, nullptr,
            FUTEX_BITSET_MATCH_ANY);
#else
  // Portable fallback: poll with a short sleep; correct, not efficient.
  if (word.load(std::memory_order_relaxed) == expected) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
#endif
  return std::chrono::steady_clock::now() < deadline;
}

/// Wakes at most one thread sleeping in futex_wait on `word`.
inline void futex_wake_one(atomic<std::uint32_t>& word) noexcept {
#if defined(__linux__)
  ::syscall(SYS_futex, futex_word(word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
#else
  word.notify_one();
#endif
}

/// Wakes every thread sleeping in futex_wait on `word`.
inline void futex_wake_all(atomic<std::uint32_t>& word) noexcept {
#if defined(__linux__)
  ::syscall(SYS_futex, futex_word(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
#else
  word.notify_all();
#endif
}

inline void note_read(void const* /*addr*/, std::size_t /*size*/) noexcept {}
inline void note_write(void const* /*addr*/, std::size_t /*size*/) noexcept {}

#endif

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
