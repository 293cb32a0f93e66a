// SPDX-License-Identifier: BSL-1.0
#pragma once
// The model checker's race detector: vector clocks, the memory orders' effect on them, and the
// per-address memory of plain (payload) accesses.
//
// Algorithm. Each model thread carries a vector clock; the happens-before edges come from the
// memory orders the code declares (a release store, or a read-modify-write continuing its
// release sequence, leaves the writer's clock on the atomic's `location`; an acquire load joins
// it; relaxed loads keep it for a later acquire fence). A plain access that the code marks
// with note_read/note_write is checked against the last write and the reads since, as epochs,
// as in FastTrack (Flanagan & Freund, "FastTrack: Efficient and Precise Dynamic Race
// Detection", PLDI 2009), simplified to one read epoch per thread. An access that is not
// ordered after a conflicting one is a data race in the C++ memory model, even though the
// execution itself ran on x86.
//
// Thread safety: none of its own. The execution (execution.hpp) calls it only from the thread
// that holds the execution's token, so calls are serialised by the token hand-over.
// Progress: no blocking; access() is O(max_threads) plus a map look-up.
// Memory: one map entry (a shadow, about 40 bytes) per distinct payload address touched in an
// execution; <spindle/model/track_allocations.hpp> drops the entries of freed memory.
// Part of the model checker; include <spindle/model/scheduler.hpp>.

#include <spindle/model/options.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace spindle::model::impl {

class vector_clock {
 public:
  auto operator[](std::size_t i) const noexcept -> std::uint32_t { return c_[i]; }
  auto operator[](std::size_t i) noexcept -> std::uint32_t& { return c_[i]; }
  void join(vector_clock const& other) noexcept {
    for (std::size_t i = 0; i < max_threads; ++i) {
      c_[i] = std::max(c_[i], other.c_[i]);
    }
  }

 private:
  std::array<std::uint32_t, max_threads> c_{};
};

/// One store in an atomic object's modification order (options::weak_memory mode).
struct store_record {
  std::uint64_t index = 0;  // its position in the object's modification order
  std::uint64_t seq = 0;    // its position among every store of the execution
  std::uint64_t bits = 0;   // the value it wrote
  vector_clock release;     // what an acquire load that reads it joins
  int thread = -1;          // the storing thread; -1: the value before the execution touched it
  std::uint32_t epoch = 0;  // the storer's own clock entry at the store (happens-before test)
};

/// Per-atomic-object state: the clock a later acquire of this object joins (the last release
/// store, joined with every read-modify-write of its release sequence). In weak_memory mode
/// also the object's last stores and what bounds each thread's next read of it
/// (execution.hpp, read_weak()).
struct location {
  vector_clock release;
  std::vector<store_record> history;              // the newest stores, oldest first
  std::uint64_t next_index = 0;                   // the index of the next store
  std::array<std::uint64_t, max_threads> seen{};  // per thread: the newest index it read or wrote
  std::array<std::uint64_t, max_threads>
      own_write{};                // per thread: 1 + the index of its last store, 0: none
  std::uint64_t sc_floor = 0;     // the index of the last seq_cst store or read-modify-write
  std::uint64_t fence_floor = 0;  // the newest index stored before its thread's seq_cst fence
};

/// Order as data: whether an access with order `o` acquires, i.e. joins the clock that the
/// release store or read-modify-write it reads from left on its location (consume as acquire).
inline auto is_acquire(std::memory_order o) noexcept -> bool {
  return o == std::memory_order_acquire || o == std::memory_order_acq_rel ||
         o == std::memory_order_seq_cst || o == std::memory_order_consume;
}
/// Order as data: whether an access with order `o` releases, i.e. leaves the thread's clock on
/// the location for a later acquire that reads from it.
inline auto is_release(std::memory_order o) noexcept -> bool {
  return o == std::memory_order_release || o == std::memory_order_acq_rel ||
         o == std::memory_order_seq_cst;
}
/// Order as data: the name of order `o`, printed in a failure's event trace.
inline auto order_name(std::memory_order o) noexcept -> char const* {
  // Order as data: indexed in the order [atomics.order] declares the enumerators.
  constexpr std::array<char const*, 6> names{"relaxed", "consume", "acquire",
                                             "release", "acq_rel", "seq_cst"};
  auto const i = static_cast<std::size_t>(o);
  return i < names.size() ? names[i] : "?";
}

/// A plain-memory access the race detector remembers.
struct shadow {
  int writer = -1;
  std::uint32_t write_epoch = 0;
  std::array<std::uint32_t, max_threads> read_epoch{};
};

/// Remembers, per address, the last plain write and each thread's last plain read, and checks
/// every new access against them.
///
/// Synchronization: none of its own. Only the thread holding the execution's token calls it;
/// the token's hand-over (under the execution's mutex) orders one caller before the next.
class race_detector {
 public:
  /// An earlier access that a new one is not ordered with.
  struct conflict {
    int thread = -1;          // the thread that made it
    char const* access = "";  // "write" or "read"
  };

  /// Checks an access to `addr` by thread `me`, whose clock is `clock`. Returns the first
  /// earlier conflicting access that does not happen-before it (a data race; nothing is then
  /// remembered); otherwise remembers this access and returns nothing.
  auto access(int me, vector_clock const& clock, void const* addr, bool is_write)
      -> std::optional<conflict> {
    auto const key = reinterpret_cast<std::uintptr_t>(addr);
    auto const self = static_cast<std::size_t>(me);
    auto& s = shadow_[key];
    if (s.writer >= 0 && s.writer != me &&
        s.write_epoch > clock[static_cast<std::size_t>(s.writer)]) {
      return conflict{s.writer, "write"};
    }
    if (is_write) {
      for (std::size_t r = 0; r < max_threads; ++r) {
        if (static_cast<int>(r) != me && s.read_epoch[r] != 0 && s.read_epoch[r] > clock[r]) {
          return conflict{static_cast<int>(r), "read"};
        }
      }
      s.writer = me;
      s.write_epoch = clock[self];
      s.read_epoch.fill(0);
    } else {
      s.read_epoch[self] = clock[self];
    }
    return std::nullopt;
  }

  /// Forgets the accesses to [lo, lo + n): the memory was freed and may be reused.
  void forget(std::uintptr_t lo, std::size_t n) {
    shadow_.erase(shadow_.lower_bound(lo), shadow_.lower_bound(lo + n));
  }

 private:
  std::map<std::uintptr_t, shadow> shadow_;
};

}  // namespace spindle::model::impl
