// SPDX-License-Identifier: BSL-1.0
#pragma once
// The coherence cost meter: an MSI-style directory of 64-byte lines that the model checker
// feeds with every instrumented operation of an execution, to count what a protocol costs in
// cache-line traffic where its threads really run at once. The model runs one thread at a time
// on any machine; the directory says which of its threads would hold each line, so a two-core
// machine can count the line transfers of 32 threads.
//
// Use. Set options::meter to a coherence_meter and run explore(); every execution then reports
// to it: each atomic load, store, read-modify-write (exchange, fetch_*, a compare-exchange that
// succeeds), compare-exchange that fails, payload access marked with note_read/note_write,
// prefetch_for_write, fence and futex call, with the model thread, the address and the size.
// The counts add up over the executions, per model thread (the body is thread 0, the threads it
// starts 1, 2, ... in the order it starts them), so a driver that knows which thread played
// which role (producer, consumer, owner, thief) adds those up. The directory itself starts
// empty at each execution (addresses are reused between executions). When options::meter is
// null, nothing is counted and the cost is one pointer test per operation.
//
// The directory. For each line: the set of model threads that hold a copy, and the one that
// holds it modified, if any (MSI: Modified, Shared, Invalid; Sorin, Hill, Wood, "A Primer on
// Memory Consistency and Cache Coherence", 2011, chapter 6). A thread stands for one core with
// a private cache as large as needed: nothing is evicted.
//   read (atomic load, payload read)
//     the thread holds the line (shared or modified): a hit, nothing counted;
//     it does not: a miss; if another thread holds the line modified, also a transfer (the
//     line comes from that core's cache, which keeps a shared copy). The reader then shares it.
//   write intent (atomic store, read-modify-write, failed compare-exchange, payload write,
//   prefetch for write)
//     the thread holds the line modified: a hit, nothing counted;
//     else, if no copy is held by this thread: a write miss; if another thread holds it
//     modified: a transfer; if any other thread holds a copy: an invalidation, and each copy
//     dropped counts in copies_invalidated. The writer then holds the line modified, alone.
// So a "transfer" is a line that moves from the core that last wrote it to another core (the
// expensive cache-to-cache hand-over, the cost that grows with the core count), and an
// "invalidation"
// is a write that first has to take the line away from other cores. A compare-exchange that
// fails is a write intent as on x86, where LOCK CMPXCHG takes the line exclusive whatever the
// outcome: a failed CAS costs a transfer like a successful one. A prefetch for write
// (PREFETCHW) takes the line exclusive like a store, without changing it.
// Each transfer or invalidation is also a move of that line: one coherence transaction that the
// line's home serialises with every other on the same line. hottest_line_moves() adds up, over
// the executions, the moves of each execution's busiest line: a throughput bound that no
// number of cores lifts (a message that moves one line three times cannot go faster than three
// line hand-overs one after the other).
//
// What it does not model. Timing of any kind: how long a transfer takes, how many are in
// flight at once, queueing at a contended line, the retry storms that make a CAS loop collapse
// under contention (those are timing: the model counts each failed CAS once, not how long the
// thread waited for the line). Spinning: a thread that spins on a line it already holds shared
// reads from its own cache and costs nothing here (a hit), which is also true of the hardware
// until the line is written; and the scheduler deschedules a spinner until some thread writes,
// so a spin loop's length is not counted at all. The store buffer (a store counts when the
// thread issues it; with options::store_buffering, loads forwarded from the thread's own
// buffer are not counted), the hardware prefetchers (the adjacent-line prefetcher that pairs
// lines into 128 bytes, the stream prefetcher), evictions and capacity, NUMA distance,
// hyper-threads sharing a core, and what the kernel touches in a futex call (the calls are
// counted, their lines are not). Plain memory that the code does not mark for the race
// detector is invisible: the meter sees the lines the library declares shared, not stack or
// thread-local data.
//
// Thread safety: none of its own. The execution calls it only from the model thread that holds
// the token, so its calls are serialised by the token hand-over; read the counts after
// explore() returns. Progress: no blocking; each call is O(lines touched) plus a hash look-up.
// Memory: one directory entry (16 bytes plus the map's node) per line touched in an execution.
// Part of the model checker; include <spindle/model/scheduler.hpp> (or
// <spindle/model/atomic.hpp>).

#include <spindle/model/options.hpp>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace spindle::model {

/// What one model thread did to the lines the meter sees, and what it cost.
struct coherence_counts {
  std::uint64_t loads = 0;               // atomic loads
  std::uint64_t stores = 0;              // atomic stores
  std::uint64_t rmws = 0;                // exchange, fetch_*, compare-exchanges that succeeded
  std::uint64_t cas_failures = 0;        // compare-exchanges that failed (a write intent on x86)
  std::uint64_t payload_reads = 0;       // note_read
  std::uint64_t payload_writes = 0;      // note_write
  std::uint64_t prefetches = 0;          // prefetch_for_write
  std::uint64_t fences = 0;              // seq_cst fences
  std::uint64_t heavy_fences = 0;        // heavy_fence (membarrier: every core takes a barrier)
  std::uint64_t futex_waits = 0;         // futex waits that slept
  std::uint64_t futex_wakes = 0;         // futex wake calls
  std::uint64_t misses = 0;              // reads of a line the thread did not hold
  std::uint64_t write_misses = 0;        // write intents on a line the thread held no copy of
  std::uint64_t transfers = 0;           // lines taken from another thread that held them modified
  std::uint64_t invalidations = 0;       // write intents that took the line from other holders
  std::uint64_t copies_invalidated = 0;  // the copies those write intents dropped

  auto operator+=(coherence_counts const& o) noexcept -> coherence_counts& {
    loads += o.loads;
    stores += o.stores;
    rmws += o.rmws;
    cas_failures += o.cas_failures;
    payload_reads += o.payload_reads;
    payload_writes += o.payload_writes;
    prefetches += o.prefetches;
    fences += o.fences;
    heavy_fences += o.heavy_fences;
    futex_waits += o.futex_waits;
    futex_wakes += o.futex_wakes;
    misses += o.misses;
    write_misses += o.write_misses;
    transfers += o.transfers;
    invalidations += o.invalidations;
    copies_invalidated += o.copies_invalidated;
    return *this;
  }
};

/// The kind of an operation reported to the meter.
enum class coherence_op : std::uint8_t {
  load,
  store,
  rmw,
  cas_failure,
  payload_read,
  payload_write,
  prefetch_for_write,
  fence,
  heavy_fence,
  futex_wait,
  futex_wake,
};

/// The directory and the per-thread counts (see the file comment).
class coherence_meter {
 public:
  static constexpr std::size_t line_bytes = 64;
  static_assert(max_threads <= 64, "the directory keeps a thread's copy as one bit of a word");

  /// Called by the execution as it starts: the lines of the previous execution are forgotten
  /// (their addresses may be reused); the counts stay.
  void begin_execution() {
    hottest_ += busiest();
    lines_.clear();
    ++executions_;
  }

  /// Thread `thread` performs `op` on [addr, addr + size) (addr is ignored by fences and
  /// futex calls, which touch no line the meter sees).
  void record(int thread, coherence_op op, void const* addr, std::size_t size) {
    auto& c = counts_[static_cast<std::size_t>(thread)];
    switch (op) {
      case coherence_op::load:
        ++c.loads;
        return touch(c, thread, addr, size, false);
      case coherence_op::payload_read:
        ++c.payload_reads;
        return touch(c, thread, addr, size, false);
      case coherence_op::store:
        ++c.stores;
        return touch(c, thread, addr, size, true);
      case coherence_op::rmw:
        ++c.rmws;
        return touch(c, thread, addr, size, true);
      case coherence_op::cas_failure:
        ++c.cas_failures;
        return touch(c, thread, addr, size, true);
      case coherence_op::payload_write:
        ++c.payload_writes;
        return touch(c, thread, addr, size, true);
      case coherence_op::prefetch_for_write:
        ++c.prefetches;
        return touch(c, thread, addr, size, true);
      case coherence_op::fence:
        ++c.fences;
        return;
      case coherence_op::heavy_fence:
        ++c.heavy_fences;
        return;
      case coherence_op::futex_wait:
        ++c.futex_waits;
        return;
      case coherence_op::futex_wake:
        ++c.futex_wakes;
        return;
    }
  }

  /// What thread `thread` did, summed over the executions since the last reset().
  [[nodiscard]] auto counts(int thread) const -> coherence_counts const& {
    return counts_[static_cast<std::size_t>(thread)];
  }

  /// Threads [first, last) together (a role the driver names).
  [[nodiscard]] auto sum(int first, int last) const -> coherence_counts {
    coherence_counts out;
    for (int t = first; t < last; ++t) {
      out += counts(t);
    }
    return out;
  }

  /// Every thread together.
  [[nodiscard]] auto total() const -> coherence_counts {
    return sum(0, static_cast<int>(max_threads));
  }

  /// The moves (transfers and invalidations) of each execution's busiest line, added up over
  /// the executions since the last reset().
  [[nodiscard]] auto hottest_line_moves() const -> std::uint64_t { return hottest_ + busiest(); }

  /// Executions metered since the last reset().
  [[nodiscard]] auto executions() const noexcept -> std::uint64_t { return executions_; }

  /// Lines in the directory now (touched in the current or last execution).
  [[nodiscard]] auto lines() const noexcept -> std::size_t { return lines_.size(); }

  /// Forgets everything: the directory, the counts and the executions.
  void reset() {
    lines_.clear();
    counts_ = {};
    executions_ = 0;
    hottest_ = 0;
  }

 private:
  struct line_state {
    std::uint64_t holders = 0;  // one bit per thread holding a copy
    int modified_by = -1;       // the thread holding it modified (then the only holder)
    std::uint64_t moves = 0;    // transfers and invalidations of this line
  };

  /// The moves of the busiest line of the current execution.
  [[nodiscard]] auto busiest() const -> std::uint64_t {
    std::uint64_t most = 0;
    for (auto const& entry : lines_) {
      most = entry.second.moves > most ? entry.second.moves : most;
    }
    return most;
  }

  void touch(coherence_counts& c, int thread, void const* addr, std::size_t size, bool write) {
    auto const lo = reinterpret_cast<std::uintptr_t>(addr) / line_bytes;
    auto const hi =
        (reinterpret_cast<std::uintptr_t>(addr) + (size == 0 ? 1 : size) - 1) / line_bytes;
    for (auto line = lo; line <= hi; ++line) {
      access(c, thread, lines_[line], write);
    }
  }

  static void access(coherence_counts& c, int thread, line_state& l, bool write) {
    auto const me = std::uint64_t{1} << static_cast<unsigned>(thread);
    bool const held = (l.holders & me) != 0;
    bool const dirty_elsewhere = l.modified_by >= 0 && l.modified_by != thread;
    if (!write) {
      if (held) {
        return;
      }
      ++c.misses;
      if (dirty_elsewhere) {
        ++c.transfers;  // the writer keeps a shared copy (M -> S)
        ++l.moves;
      }
      l.modified_by = -1;
      l.holders |= me;
      return;
    }
    if (l.modified_by == thread) {
      return;
    }
    if (!held) {
      ++c.write_misses;
    }
    if (dirty_elsewhere) {
      ++c.transfers;
    }
    if (auto const others = l.holders & ~me; others != 0) {
      ++l.moves;  // one transaction, whether the line also came modified from another core
      ++c.invalidations;
      c.copies_invalidated += static_cast<std::uint64_t>(std::popcount(others));
    }
    l.holders = me;
    l.modified_by = thread;
  }

  std::unordered_map<std::uintptr_t, line_state> lines_;
  std::array<coherence_counts, max_threads> counts_{};
  std::uint64_t executions_ = 0;
  std::uint64_t hottest_ = 0;  // busiest() of the executions before the current one
};

}  // namespace spindle::model
