// The checker's weak-memory mode (options::weak_memory, scheduler.hpp "Memory models") on the
// classic litmus tests: each outcome the C++ memory model allows is found, each it forbids never
// is, and the SC and x86-TSO modes keep to their own sets. The tests name the outcome, the
// orders and the mode; every exploration is exhaustive within its preemption bound (a stale
// read counts as one), so "never" means in every schedule of that bound.
#include <spindle/model/atomic.hpp>
#include <spindle/model/track_allocations.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle_test::quiet;
using spindle_test::tso;
using spindle_test::weak;

namespace {

/// Every schedule within three preemptions (stale reads included), quiet.
auto every(model::options (*mode)(model::options) = nullptr) -> model::options {
  auto o = quiet(model::exhaustive(3, 200000));
  return mode == nullptr ? o : mode(o);
}

constexpr auto relaxed = std::memory_order_relaxed;
constexpr auto acquire = std::memory_order_acquire;
constexpr auto release = std::memory_order_release;
constexpr auto seq_cst = std::memory_order_seq_cst;

/// Message passing: data, then a flag; a reader that sees the flag must see the data.
template <std::memory_order Store, std::memory_order Load>
void message_passing() {
  model::atomic<std::uint32_t> data{0};
  model::atomic<std::uint32_t> flag{0};
  model::thread writer([&] {
    data.store(1, relaxed);
    flag.store(1, Store);
  });
  if (flag.load(Load) == 1) {
    model::check(data.load(relaxed) == 1, "MP: the flag was seen, the data was not");
  }
  writer.join();
}

/// Message passing through fences: relaxed accesses, a release fence before the flag and an
/// acquire fence after it.
void message_passing_with_fences() {
  model::atomic<std::uint32_t> data{0};
  model::atomic<std::uint32_t> flag{0};
  model::thread writer([&] {
    data.store(1, relaxed);
    model::fence(release);
    flag.store(1, relaxed);
  });
  if (flag.load(relaxed) == 1) {
    model::fence(acquire);
    model::check(data.load(relaxed) == 1, "MP with fences: the data was not seen");
  }
  writer.join();
}

/// Store buffering (Dekker): each thread stores its flag, then loads the other's; both
/// reading 0 is the outcome a store->load fence forbids. `Fence`: a seq_cst fence between.
template <std::memory_order Order, bool Fence>
void store_buffering() {
  model::atomic<std::uint32_t> x{0};
  model::atomic<std::uint32_t> y{0};
  std::uint32_t r1 = 0;
  model::thread other([&] {
    y.store(1, Order);
    if constexpr (Fence) {
      model::fence(seq_cst);
    }
    r1 = x.load(Order);
  });
  x.store(1, Order);
  if constexpr (Fence) {
    model::fence(seq_cst);
  }
  std::uint32_t const r2 = y.load(Order);
  other.join();
  model::check(r1 == 1 || r2 == 1, "SB: both threads read 0");
}

/// Coherence of reads (CoRR): two loads of one object by one thread never go back in its
/// modification order, whatever the orders.
void coherent_reads() {
  model::atomic<std::uint32_t> x{0};
  model::thread writer([&] {
    x.store(1, relaxed);
    x.store(2, relaxed);
  });
  std::uint32_t const a = x.load(relaxed);
  std::uint32_t const b = x.load(relaxed);
  writer.join();
  model::check(!(a == 2 && b != 2) && !(a == 1 && b == 0), "CoRR: a later read saw an older value");
}

/// A relaxed load may read an older value than memory holds: the reader, having seen 2 on one
/// object, reads the other object's older value, which SC and TSO never show.
void stale_relaxed_read() {
  model::atomic<std::uint32_t> x{0};
  model::atomic<std::uint32_t> y{0};
  model::thread writer([&] {
    x.store(1, relaxed);
    y.store(1, relaxed);
  });
  if (y.load(relaxed) == 1) {
    model::check(x.load(relaxed) == 1, "a relaxed load read an older value");
  }
  writer.join();
}

/// Independent reads of independent writes (IRIW): two readers disagree on the order of two
/// writes. Allowed with acquire loads; forbidden when every access is seq_cst.
template <std::memory_order Order>
void iriw() {
  model::atomic<std::uint32_t> x{0};
  model::atomic<std::uint32_t> y{0};
  std::uint32_t a1 = 0;
  std::uint32_t a2 = 0;
  std::uint32_t b1 = 0;
  std::uint32_t b2 = 0;
  model::thread wx([&] { x.store(1, Order == acquire ? release : Order); });
  model::thread wy([&] { y.store(1, Order == acquire ? release : Order); });
  model::thread reader_a([&] {
    a1 = x.load(Order);
    a2 = y.load(Order);
  });
  b1 = y.load(Order);
  b2 = x.load(Order);
  wx.join();
  wy.join();
  reader_a.join();
  model::check(!(a1 == 1 && a2 == 0 && b1 == 1 && b2 == 0), "IRIW: the readers disagree");
}

/// A relaxed read-modify-write continues the release sequence of a release store: an acquire
/// load that reads the RMW's value synchronises with the release store ([intro.races]/5).
void release_sequence() {
  model::atomic<std::uint32_t> data{0};
  model::atomic<std::uint32_t> flag{0};
  model::thread writer([&] {
    data.store(1, relaxed);
    flag.store(1, release);
  });
  model::thread bumper([&] { flag.fetch_add(1, relaxed); });
  if (flag.load(acquire) == 2) {
    // 2: the RMW read the release store (the release sequence); the data must be visible.
    model::check(data.load(relaxed) == 1, "release sequence: the data was not seen");
  }
  writer.join();
  bumper.join();
}

/// A payload published with a relaxed flag is a data race once a stale read is possible; the
/// race detector reports it in every mode, as the mode shows the stale value it leads to.
void relaxed_publication_of_a_payload() {
  model::plain<int> payload;
  model::atomic<std::uint32_t> flag{0};
  model::thread writer([&] {
    payload.set(7);
    flag.store(1, relaxed);
  });
  if (flag.load(acquire) == 1) {
    model::check(payload.get() == 7, "the payload was not seen");
  }
  writer.join();
}

void expect_caught(char const* name, model::options const& o, void (*body)(),
                   model::failure_kind kind = model::failure_kind::assertion) {
  auto const r = model::explore(o, body);
  ASSERT_FALSE(r) << name;
  EXPECT_EQ(r.failure, kind) << r.message;
  std::printf("[model] %-44s outcome found after %llu executions\n", name,
              static_cast<unsigned long long>(r.executions));
}

void expect_never(char const* name, model::options const& o, void (*body)()) {
  auto const r = model::explore(o, body);
  EXPECT_TRUE(r) << name << ": " << r.message;
  EXPECT_TRUE(r.exhausted) << name;
  spindle_test::print_stats(name, r);
}

}  // namespace

TEST(ModelWeakMemory, Example) {
  // Message passing with a relaxed flag: never wrong under SC or x86-TSO, wrong under the C++
  // memory model; release/acquire makes it right there too.
  expect_never("MP relaxed, SC", every(), message_passing<relaxed, relaxed>);
  expect_never("MP relaxed, TSO", every(tso), message_passing<relaxed, relaxed>);
  expect_caught("MP relaxed, weak", every(weak), message_passing<relaxed, relaxed>);
  expect_never("MP release/acquire, weak", every(weak), message_passing<release, acquire>);
}

TEST(ModelWeakMemory, MessagePassing) {
  expect_caught("MP release/relaxed, weak", every(weak), message_passing<release, relaxed>);
  expect_caught("MP relaxed/acquire, weak", every(weak), message_passing<relaxed, acquire>);
  expect_never("MP seq_cst, weak", every(weak), message_passing<seq_cst, seq_cst>);
  expect_never("MP through fences, weak", every(weak), message_passing_with_fences);
  expect_caught("stale relaxed read, weak", every(weak), stale_relaxed_read);
  expect_never("stale relaxed read, SC", every(), stale_relaxed_read);
  expect_never("stale relaxed read, TSO", every(tso), stale_relaxed_read);
}

TEST(ModelWeakMemory, StoreBuffering) {
  expect_never("SB relaxed, SC", every(), store_buffering<relaxed, false>);
  expect_caught("SB relaxed, TSO", every(tso), store_buffering<relaxed, false>);
  expect_caught("SB relaxed, weak", every(weak), store_buffering<relaxed, false>);
  expect_caught("SB release/acquire, weak", every(weak), store_buffering<acquire, false>);
  expect_never("SB seq_cst, weak", every(weak), store_buffering<seq_cst, false>);
  expect_never("SB relaxed + seq_cst fences, weak", every(weak), store_buffering<relaxed, true>);
  expect_never("SB relaxed + seq_cst fences, TSO", every(tso), store_buffering<relaxed, true>);
}

TEST(ModelWeakMemory, CoherenceAndReleaseSequences) {
  expect_never("CoRR, weak", every(weak), coherent_reads);
  expect_never("release sequence through a relaxed RMW, weak", every(weak), release_sequence);
}

TEST(ModelWeakMemory, Iriw) {
  expect_caught("IRIW acquire, weak", every(weak), iriw<acquire>);
  expect_never("IRIW seq_cst, weak", every(weak), iriw<seq_cst>);
  expect_never("IRIW acquire, TSO", every(tso), iriw<acquire>);
}

TEST(ModelWeakMemory, RelaxedPublicationIsARaceInEveryMode) {
  expect_caught("relaxed publication, SC", every(), relaxed_publication_of_a_payload,
                model::failure_kind::data_race);
  expect_caught("relaxed publication, weak", every(weak), relaxed_publication_of_a_payload,
                model::failure_kind::data_race);
}

TEST(ModelWeakMemory, WeakAndStoreBufferingExcludeEachOther) {
  auto o = every(weak);
  o.store_buffering = true;
  auto const r = model::explore(o, [] {});
  EXPECT_EQ(r.failure, model::failure_kind::misuse) << r.message;
}
