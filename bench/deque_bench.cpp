// Benchmarks for <spindle/deque.hpp>, with its peers side by side in the same run:
//   - owner push+pop pairs: spindle (LIFO), an unsynchronised std::vector (the floor), a
//     std::mutex-guarded std::deque, xenium's chase_work_stealing_deque (fixed-size and
//     growable storage) when SPINDLE_HAVE_XENIUM is defined;
//   - push then steal from one thread (the steal protocol's own cost, no cache misses);
//   - a steal from an empty deque (what an idle thief polling its victims pays);
//   - one owner pushing and one thief stealing (items/s), the same with batch steals, into
//     the thief's own deque (steal_batch_and_pop) and into a span (steal_batch); xenium has
//     none: its batch row takes up to 32 items by single steals;
//   - the cost of the store->load barrier in pop: store + seq_cst fence against an exchange.
// Every run of the two-thread benchmarks checks that each item was taken exactly once and calls
// SkipWithError instead of reporting a figure when it was not.
//
// Run: deque_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

#include <spindle/deque.hpp>

#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "bench/support/peers.hpp"

namespace {

constexpr std::size_t round_items = std::size_t{1} << 15;  // items per two-thread round

// ---------------------------------------------------------------------------------------------
// Adapters: one owner side (push, pop) and one thief side (take, take_batch) per peer. Items
// are indices 0..round_items-1 (xenium stores pointers: pointers into a table of indices).

template <spindle::deque_order Order>
struct spindle_peer_in {
  spindle::deque_owner<std::uint32_t> owner{Order};
  spindle::stealer<std::uint32_t> thief = owner.stealer();
  spindle::deque_owner<std::uint32_t> thief_local;

  void push(std::uint32_t v) { owner.push(v); }
  auto pop() -> std::optional<std::uint32_t> { return owner.pop(); }
  auto take() -> std::optional<std::uint32_t> {
    for (;;) {
      auto r = thief.steal();
      if (!r.is_retry()) {
        return r.value;
      }
    }
  }
  // Takes a batch: the returned item first, then what was moved into the thief's own deque.
  template <class Fn>
  auto take_batch(Fn&& fn) -> bool {
    for (;;) {
      auto r = thief.steal_batch_and_pop(thief_local);
      if (r) {
        fn(*r.value);
        while (auto v = thief_local.pop()) {
          fn(*v);
        }
        return true;
      }
      if (r.is_empty()) {
        return false;
      }
    }
  }
};

struct mutex_peer {
  std::mutex lock;
  std::deque<std::uint32_t> items;

  void push(std::uint32_t v) {
    std::lock_guard guard(lock);
    items.push_back(v);
  }
  auto pop() -> std::optional<std::uint32_t> {
    std::lock_guard guard(lock);
    if (items.empty()) {
      return std::nullopt;
    }
    auto v = items.back();
    items.pop_back();
    return v;
  }
  auto take() -> std::optional<std::uint32_t> {
    std::lock_guard guard(lock);
    if (items.empty()) {
      return std::nullopt;
    }
    auto v = items.front();
    items.pop_front();
    return v;
  }
  template <class Fn>
  auto take_batch(Fn&& fn) -> bool {
    std::uint32_t batch[33];
    std::size_t n = 0;
    {
      std::lock_guard guard(lock);
      n = std::min<std::size_t>((items.size() + 1) / 2, 33);
      for (std::size_t i = 0; i < n; ++i) {
        batch[i] = items.front();
        items.pop_front();
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      fn(batch[i]);
    }
    return n > 0;
  }
};

using spindle_peer = spindle_peer_in<spindle::deque_order::lifo>;
using spindle_fifo_peer = spindle_peer_in<spindle::deque_order::fifo>;

// The same deques, with the thief's batch taken by steal_batch into a span of 33 (the most
// steal_batch_and_pop takes): the thief runs the items itself, no deque of its own between.
template <spindle::deque_order Order>
struct spindle_span_peer_in : spindle_peer_in<Order> {
  template <class Fn>
  auto take_batch(Fn&& fn) -> bool {
    std::array<std::uint32_t, 33> batch{};
    for (;;) {
      auto const r = this->thief.steal_batch(batch);
      for (std::size_t i = 0; i < r.count; ++i) {
        fn(batch[i]);
      }
      if (!r.is_retry()) {
        return r.is_stolen();
      }
    }
  }
};
using spindle_span_peer = spindle_span_peer_in<spindle::deque_order::lifo>;
using spindle_fifo_span_peer = spindle_span_peer_in<spindle::deque_order::fifo>;

#if defined(SPINDLE_HAVE_XENIUM)
auto index_table() -> std::vector<std::uint32_t>& {
  static std::vector<std::uint32_t> table = [] {
    std::vector<std::uint32_t> t(round_items);
    for (std::size_t i = 0; i < round_items; ++i) {
      t[i] = static_cast<std::uint32_t>(i);
    }
    return t;
  }();
  return table;
}

template <class Deque>
struct xenium_peer {
  Deque q;
  std::uint32_t* base = index_table().data();

  void push(std::uint32_t v) {
    while (!q.try_push(base + v)) {
    }
  }
  auto pop() -> std::optional<std::uint32_t> {
    std::uint32_t* p = nullptr;
    if (!q.try_pop(p)) {
      return std::nullopt;
    }
    return decode(p);
  }
  auto take() -> std::optional<std::uint32_t> {
    std::uint32_t* p = nullptr;
    // try_steal has no empty/lost distinction: false can be either.
    if (!q.try_steal(p)) {
      return std::nullopt;
    }
    return decode(p);
  }
  // xenium has no batch steal: a "batch" is up to 32 single steals, stopping at the first
  // that fails, so the batch rows show what spindle's steal_batch_and_pop buys over them.
  template <class Fn>
  auto take_batch(Fn&& fn) -> bool {
    std::size_t n = 0;
    while (n < 32) {
      auto v = take();
      if (!v) {
        break;
      }
      fn(*v);
      ++n;
    }
    return n > 0;
  }
  // An out-of-table pointer decodes to an index the exactly-once check rejects.
  auto decode(std::uint32_t* p) const -> std::uint32_t {
    auto const d = p - base;
    return d >= 0 && static_cast<std::size_t>(d) < round_items ? static_cast<std::uint32_t>(d)
                                                               : ~std::uint32_t{0};
  }
};

using xenium_fixed = xenium_peer<xenium::chase_work_stealing_deque<
    std::uint32_t, xenium::policy::container<
                       xenium::detail::fixed_size_circular_array<std::uint32_t, round_items>>>>;
using xenium_growable = xenium_peer<xenium::chase_work_stealing_deque<std::uint32_t>>;
#endif

// ---------------------------------------------------------------------------------------------
// Owner push+pop pairs, one thread, on top of state.range(0) items that stay queued (depth 0:
// every pop takes the last item, which a Chase-Lev pop decides with a CAS).

template <class Peer>
void owner_push_pop(benchmark::State& state) {
  Peer peer;
  for (std::int64_t d = 0; d < state.range(0); ++d) {
    peer.push(static_cast<std::uint32_t>(d));
  }
  std::uint32_t i = 0;
  std::uint64_t wrong = 0;
  for (auto _ : state) {
    peer.push(i & (round_items - 1));
    auto v = peer.pop();
    wrong += v != (i & (round_items - 1)) ? 1 : 0;
    ++i;
  }
  if (wrong != 0) {
    state.SkipWithError("pop returned a different item than the one pushed");
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

// The thief's path without contention: one thread pushes an item and steals it back, so the
// figure is the cost of the steal protocol itself (barriers included), not of cache misses.
template <class Peer>
void owner_push_thief_take(benchmark::State& state) {
  Peer peer;
  std::uint32_t i = 0;
  std::uint64_t wrong = 0;
  for (auto _ : state) {
    peer.push(i & (round_items - 1));
    auto v = peer.take();
    wrong += v != (i & (round_items - 1)) ? 1 : 0;
    ++i;
  }
  if (wrong != 0) {
    state.SkipWithError("steal returned a different item than the one pushed");
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

// A thief polling an empty deque, as an idle executor thread polls its victims: the cost of
// finding nothing, barriers included.
template <class Peer>
void thief_take_empty(benchmark::State& state) {
  Peer peer;
  std::uint64_t wrong = 0;
  for (auto _ : state) {
    wrong += peer.take().has_value() ? 1 : 0;
  }
  if (wrong != 0) {
    state.SkipWithError("a steal from an empty deque returned an item");
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void vector_push_pop(benchmark::State& state) {
  std::vector<std::uint32_t> v;
  v.reserve(64);
  v.resize(static_cast<std::size_t>(state.range(0)));
  std::uint32_t i = 0;
  std::uint64_t wrong = 0;
  for (auto _ : state) {
    v.push_back(i);
    benchmark::DoNotOptimize(v.data());
    wrong += v.back() != i ? 1 : 0;
    v.pop_back();
    benchmark::ClobberMemory();
    ++i;
  }
  if (wrong != 0) {
    state.SkipWithError("vector returned a different item");
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

// ---------------------------------------------------------------------------------------------
// One owner pushing round_items per iteration, one thief taking them all (singly or in
// batches). The thief checks each index arrives exactly once.

template <class Peer, bool Batch>
void owner_and_thief(benchmark::State& state) {
  Peer peer;
  std::atomic<std::uint64_t> round{0};
  std::atomic<std::uint64_t> pushed{0};
  std::atomic<std::uint64_t> finished{0};
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> errors{0};

  std::thread thief([&] {
    std::vector<std::uint8_t> seen(round_items);
    for (std::uint64_t r = 1;; ++r) {
      while (round.load(std::memory_order_acquire) < r) {
        if (stop.load(std::memory_order_acquire)) {
          return;
        }
        std::this_thread::yield();
      }
      std::fill(seen.begin(), seen.end(), 0);
      std::size_t got = 0;
      std::uint64_t bad = 0;
      auto record = [&](std::uint32_t v) {
        if (v >= round_items || seen[v]++ != 0) {
          ++bad;
        }
        ++got;
      };
      for (;;) {
        bool const done_pushing = pushed.load(std::memory_order_acquire) >= r;
        bool took = false;
        if constexpr (Batch) {
          took = peer.take_batch(record);
        } else if (auto v = peer.take()) {
          record(*v);
          took = true;
        }
        if (!took && done_pushing) {
          break;
        }
      }
      if (bad != 0 || got != round_items) {
        errors.fetch_add(1, std::memory_order_relaxed);
      }
      finished.store(r, std::memory_order_release);
    }
  });

  std::uint64_t r = 0;
  for (auto _ : state) {
    ++r;
    round.store(r, std::memory_order_release);
    for (std::size_t i = 0; i < round_items; ++i) {
      peer.push(static_cast<std::uint32_t>(i));
    }
    pushed.store(r, std::memory_order_release);
    while (finished.load(std::memory_order_acquire) < r) {
      std::this_thread::yield();
    }
    if (errors.load(std::memory_order_relaxed) != 0) {
      state.SkipWithError("an item was lost, duplicated or corrupted");
      break;
    }
  }
  stop.store(true, std::memory_order_release);
  thief.join();
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * round_items));
}

// ---------------------------------------------------------------------------------------------
// The barrier in the owner's pop: a release store then a seq_cst fence (what pop does), against
// one seq_cst exchange, each followed by the load of the other index.

void barrier_store_fence(benchmark::State& state) {
  spindle::detail::atomic<std::int64_t> bottom{0};
  spindle::detail::atomic<std::int64_t> top{0};
  std::int64_t i = 0;
  for (auto _ : state) {
    bottom.store(++i, std::memory_order_release);
    spindle::detail::fence_seq_cst();
    benchmark::DoNotOptimize(top.load(std::memory_order_acquire));
  }
}

void barrier_exchange(benchmark::State& state) {
  spindle::detail::atomic<std::int64_t> bottom{0};
  spindle::detail::atomic<std::int64_t> top{0};
  std::int64_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(bottom.exchange(++i, std::memory_order_seq_cst));
    benchmark::DoNotOptimize(top.load(std::memory_order_acquire));
  }
}

void relaxed_store_load(benchmark::State& state) {
  spindle::detail::atomic<std::int64_t> bottom{0};
  spindle::detail::atomic<std::int64_t> top{0};
  std::int64_t i = 0;
  for (auto _ : state) {
    bottom.store(++i, std::memory_order_release);
    benchmark::DoNotOptimize(top.load(std::memory_order_acquire));
  }
}

}  // namespace

BENCHMARK(vector_push_pop)->Name("owner_push_pop/std_vector_unsynchronised")->Arg(0)->Arg(16);
BENCHMARK(owner_push_pop<spindle_peer>)->Name("owner_push_pop/spindle_lifo")->Arg(0)->Arg(16);
BENCHMARK(owner_push_pop<mutex_peer>)->Name("owner_push_pop/mutex_std_deque")->Arg(0)->Arg(16);
#if defined(SPINDLE_HAVE_XENIUM)
BENCHMARK(owner_push_pop<xenium_fixed>)->Name("owner_push_pop/xenium_fixed")->Arg(0)->Arg(16);
BENCHMARK(owner_push_pop<xenium_growable>)->Name("owner_push_pop/xenium_growable")->Arg(0)->Arg(16);
#endif

BENCHMARK(owner_push_thief_take<spindle_peer>)->Name("push_then_steal/spindle");
BENCHMARK(owner_push_thief_take<mutex_peer>)->Name("push_then_steal/mutex_std_deque");
#if defined(SPINDLE_HAVE_XENIUM)
BENCHMARK(owner_push_thief_take<xenium_fixed>)->Name("push_then_steal/xenium_fixed");
#endif

BENCHMARK(thief_take_empty<spindle_peer>)->Name("steal_empty/spindle");
BENCHMARK(thief_take_empty<mutex_peer>)->Name("steal_empty/mutex_std_deque");
#if defined(SPINDLE_HAVE_XENIUM)
BENCHMARK(thief_take_empty<xenium_fixed>)->Name("steal_empty/xenium_fixed");
#endif

BENCHMARK(owner_and_thief<spindle_peer, false>)->Name("owner_and_thief/spindle")->UseRealTime();
BENCHMARK(owner_and_thief<mutex_peer, false>)
    ->Name("owner_and_thief/mutex_std_deque")
    ->UseRealTime();
#if defined(SPINDLE_HAVE_XENIUM)
BENCHMARK(owner_and_thief<xenium_fixed, false>)
    ->Name("owner_and_thief/xenium_fixed")
    ->UseRealTime();
BENCHMARK(owner_and_thief<xenium_growable, false>)
    ->Name("owner_and_thief/xenium_growable")
    ->UseRealTime();
#endif
BENCHMARK(owner_and_thief<spindle_peer, true>)
    ->Name("owner_and_batch_thief/spindle")
    ->UseRealTime();
BENCHMARK(owner_and_thief<spindle_fifo_peer, true>)
    ->Name("owner_and_batch_thief/spindle_fifo_owner")
    ->UseRealTime();
BENCHMARK(owner_and_thief<spindle_span_peer, true>)
    ->Name("owner_and_batch_thief/spindle_steal_batch_span")
    ->UseRealTime();
BENCHMARK(owner_and_thief<spindle_fifo_span_peer, true>)
    ->Name("owner_and_batch_thief/spindle_fifo_owner_steal_batch_span")
    ->UseRealTime();
BENCHMARK(owner_and_thief<mutex_peer, true>)
    ->Name("owner_and_batch_thief/mutex_std_deque")
    ->UseRealTime();
#if defined(SPINDLE_HAVE_XENIUM)
BENCHMARK(owner_and_thief<xenium_fixed, true>)
    ->Name("owner_and_batch_thief/xenium_fixed_single_steals")
    ->UseRealTime();
#endif

BENCHMARK(relaxed_store_load)->Name("pop_barrier/release_store_no_barrier");
BENCHMARK(barrier_store_fence)->Name("pop_barrier/release_store_then_fence");
BENCHMARK(barrier_exchange)->Name("pop_barrier/seq_cst_exchange");

BENCHMARK_MAIN();
