// SPDX-License-Identifier: BSL-1.0
#pragma once
// What a worker publishes for spindle::dump() (spindle/dump.hpp): its state, how deep tasks
// are nested on its stack and the names of the named ones, and the isolation region of its
// wait. Written by the worker (or the guest holding the slot) as it goes; read by a dump,
// from any thread, at any time.
//
// Cost: the scheduler's run() stores the activity word twice per task (relaxed, on a line the
// owner alone writes); a wait stores it twice per wait, a park twice per sleep. A task without
// a name touches nothing else: a named task (detail/executor/diag.hpp, named_callable) writes
// its frame's name and id at its start and restores them at its end.
//
// Synchronization:
//   activity   written by the owner only (relaxed); read by dumps (relaxed). The word is the
//              worker_state in its low byte and the nesting depth above it, so that a dump
//              sees a state and a depth that belong together.
//   region     written by the owner only (relaxed), read by dumps (relaxed).
//   frames[d]  name, id and join key of the named task at depth d + 1, and the join that
//              task waits in: written by the owner (relaxed), read by dumps (relaxed). Two loads: a
//              dump that races with the end of a task may pair a name with the id of the next task
//              at that depth; a diagnostic tolerates that, and the name itself is a string literal
//              (spindle::name), valid whatever task it belonged to.
//   Nothing here orders anything else: a dump is a snapshot, not a synchronisation point.
//
// Under the model checker (SPINDLE_MODEL_CHECK) nothing is stored: these words are no part of
// any protocol, and each store would add a scheduling point to every model test.

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/diagnostics.hpp>

#include <array>
#include <cstddef>
#include <cstdint>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

#if defined(SPINDLE_MODEL_CHECK)
inline constexpr bool diag_on = false;
#else
inline constexpr bool diag_on = true;
#endif

/// Depths of nested tasks whose names a worker keeps; deeper ones show as unnamed.
inline constexpr std::size_t diag_frames = 8;

struct diag_label {
  atomic<char const*> name{nullptr};
  atomic<std::uint64_t> id{0};
  // What a join of the named task waits on (its completion), so that a dump can name the task
  // a join at another depth or on another worker waits for; null for a task nobody can join.
  atomic<void const*> key{nullptr};
  // The join the task at this depth waits in (detail/sync/wait_note.hpp), 0 when none.
  atomic<std::uint64_t> waits{0};
};

/// A worker's published state: see the file comment.
struct worker_diag {
  static constexpr std::uint32_t depth_shift = 8;
  static constexpr std::uint32_t state_mask = 0xffU;

  // INVARIANT: low byte a worker_state, the rest the number of run() calls on the owner's stack.
  atomic<std::uint32_t> activity{0};
  atomic<std::uint64_t> region{0};
  std::array<diag_label, diag_frames> frames{};

  [[nodiscard]] static constexpr auto pack(std::uint32_t depth, worker_state s) noexcept
      -> std::uint32_t {
    return (depth << depth_shift) | static_cast<std::uint32_t>(s);
  }

  /// The owner's word (the owner's own load: relaxed, it is the only writer).
  [[nodiscard]] auto own() const noexcept -> std::uint32_t {
    // relaxed: the owner reads its own store.
    return activity.load(std::memory_order_relaxed);
  }

  /// The owner: state `s` at the same depth; returns the word to restore.
  SPINDLE_ALWAYS_INLINE auto set_state(worker_state s) noexcept -> std::uint32_t {
    if constexpr (!diag_on) {
      return 0;
    } else {
      std::uint32_t const before = own();
      // relaxed: read only by dumps, which need this word's own coherence and nothing else.
      activity.store((before & ~state_mask) | static_cast<std::uint32_t>(s),
                     std::memory_order_relaxed);
      return before;
    }
  }

  /// The owner begins a task one level deeper; returns the word to restore.
  SPINDLE_ALWAYS_INLINE auto begin_task() noexcept -> std::uint32_t {
    if constexpr (!diag_on) {
      return 0;
    } else {
      std::uint32_t const before = own();
      // relaxed: as in set_state().
      activity.store(pack((before >> depth_shift) + 1, worker_state::running),
                     std::memory_order_relaxed);
      return before;
    }
  }

  /// The owner puts back a word set_state() or begin_task() returned.
  SPINDLE_ALWAYS_INLINE void restore(std::uint32_t word) noexcept {
    if constexpr (diag_on) {
      // relaxed: as in set_state().
      activity.store(word, std::memory_order_relaxed);
    }
  }

  /// The owner's task at the current depth waits in the join `note` (or no longer, with the
  /// value this returned); returns the note to restore.
  auto set_wait(std::uint64_t note) noexcept -> std::uint64_t {
    if constexpr (!diag_on) {
      static_cast<void>(note);
      return 0;
    } else {
      std::uint32_t const depth = own() >> depth_shift;
      if (depth == 0 || depth > diag_frames) {
        return 0;
      }
      atomic<std::uint64_t>& w = frames[depth - 1].waits;
      // relaxed: the owner reads its own store.
      std::uint64_t const before = w.load(std::memory_order_relaxed);
      // relaxed: read only by dumps.
      w.store(note, std::memory_order_relaxed);
      return before;
    }
  }

  /// The owner enters (or leaves, with 0) the wait of isolation region `r`; returns the
  /// region to restore.
  auto set_region(std::uint64_t r) noexcept -> std::uint64_t {
    if constexpr (!diag_on) {
      return 0;
    } else {
      // relaxed: the owner reads its own store.
      std::uint64_t const before = region.load(std::memory_order_relaxed);
      // relaxed: read only by dumps.
      region.store(r, std::memory_order_relaxed);
      return before;
    }
  }
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
