// SPDX-License-Identifier: BSL-1.0
#pragma once
// What a wait says about itself for spindle::dump(): the kind of wait (spindle::wait_kind) and
// the object waited on, and the one-word note into which a listed coroutine's awaitable packs
// them while the coroutine is suspended (detail/coro/cancel.hpp, cancel_slot::note).
//
// The word: bits 0-7 the kind, bits 8-15 a count (a select's cases, when_all's tasks; capped
// at 255), bits 16-63 the object's address. A user-space address fits in 48 bits on the
// 64-bit targets spindle builds for (x86-64 and arm64 with 48-bit virtual addresses); where it
// would not, the dump shows a truncated address, which still tells objects apart within one
// dump in practice and is never dereferenced. One word, so that a dump from another thread
// reads a kind and an object that belong together with one relaxed load.
//
// Threads: a thread of an executor that blocks (a channel operation, a select, a lock, a
// latch) notes the same word in its worker's published state for the time it sleeps
// (blocking_note_scope), so that a dump shows what a worker's task is blocked on.

#include <spindle/detail/sync/config.hpp>
#include <spindle/diagnostics.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// A wait as one of its parts describes it (select_case::describe).
struct wait_target {
  wait_kind kind = wait_kind::other;
  void const* object = nullptr;
};

inline constexpr std::uint64_t note_object_shift = 16;
inline constexpr std::uint64_t note_count_shift = 8;

/// The note of a wait; 0 is "not waiting" (wait_kind::none).
[[nodiscard]] inline auto pack_note(wait_kind kind, void const* object,
                                    std::size_t count = 0) noexcept -> std::uint64_t {
  auto const address = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(object));
  auto const n = static_cast<std::uint64_t>(std::min<std::size_t>(count, 0xff));
  return (address << note_object_shift) | (n << note_count_shift) |
         static_cast<std::uint64_t>(kind);
}

/// The parts of a note, for a dump.
[[nodiscard]] inline auto unpack_note(std::uint64_t note) noexcept -> wait_dump {
  wait_dump w;
  auto const kind = static_cast<std::uint8_t>(note & 0xffU);
  w.kind = kind <= static_cast<std::uint8_t>(wait_kind::other) ? static_cast<wait_kind>(kind)
                                                               : wait_kind::other;
  w.cases = static_cast<std::size_t>((note >> note_count_shift) & 0xffU);
  w.object = static_cast<std::uintptr_t>(note >> note_object_shift);
  return w;
}

/// The object part of a note for `object`, as unpack_note() gives it back: a dump compares
/// the object of a join with the keys of tasks it knows through this.
[[nodiscard]] inline auto note_object(void const* object) noexcept -> std::uintptr_t {
  return unpack_note(pack_note(wait_kind::none, object)).object;
}

/// Where the calling thread notes a blocking wait (a channel operation, a select, a lock) for
/// dumps: an executor's worker, or a thread in one of its guest slots, points it at the state
/// it publishes (detail/executor/diag_state.hpp, set_wait) while it runs there; null on every
/// other thread. `set` stores a note and returns the one it replaced.
struct thread_note_sink {
  std::uint64_t (*set)(void* context, std::uint64_t note) noexcept = nullptr;
  void* context = nullptr;
};

inline thread_local thread_note_sink current_note_sink{};

/// While alive, the calling thread's sink (if any) holds the note of `what`: made just before
/// a thread parks, so it costs a thread-local load on the way to a sleep and nothing on a path
/// that does not block.
class blocking_note_scope {
 public:
  explicit blocking_note_scope(wait_target what, std::size_t count = 0) noexcept {
    if (what.kind == wait_kind::none) {
      return;
    }
    thread_note_sink const& sink = current_note_sink;
    if (sink.set != nullptr) {
      sink_ = sink;
      before_ = sink.set(sink.context, pack_note(what.kind, what.object, count));
    }
  }
  blocking_note_scope(blocking_note_scope const&) = delete;
  auto operator=(blocking_note_scope const&) -> blocking_note_scope& = delete;
  ~blocking_note_scope() {
    if (sink_.set != nullptr) {
      sink_.set(sink_.context, before_);
    }
  }

 private:
  thread_note_sink sink_{};
  std::uint64_t before_ = 0;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
