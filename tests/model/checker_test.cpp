// The model checker itself: deliberately broken primitives, written for these tests only, must
// be caught (deadlock, lost wake-up, data race, duplicated item, livelock), their correct
// versions must pass, and a failing schedule must replay to the same failure.
#include <spindle/model/atomic.hpp>
#include <spindle/model/track_allocations.hpp>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <initializer_list>

#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle_test::tso;

namespace {

auto quiet(model::options o) -> model::options {
  o.quiet = true;
  o.use_environment = false;
  return o;
}

void print_caught(char const* name, model::report const& r) {
  std::printf("[model] seeded bug '%s' caught as %s after %llu executions; replay %s\n", name,
              model::to_string(r.failure), static_cast<unsigned long long>(r.executions),
              r.schedule.c_str());
}

// ---- a parker, correct or with an unpark that forgets to wake the sleeper -----------------

enum class parker_bug : std::uint8_t { none, unpark_skips_wake };

template <parker_bug Bug>
class test_parker {
 public:
  void park() {
    if (state_.fetch_sub(1, std::memory_order_acquire) == notified) {
      return;
    }
    for (;;) {
      model::futex_wait(state_, parked);
      std::uint32_t expected = notified;
      if (state_.compare_exchange_strong(expected, empty, std::memory_order_acquire)) {
        return;
      }
    }
  }
  void unpark() {
    if (state_.exchange(notified, std::memory_order_release) == parked && Bug == parker_bug::none) {
      model::futex_wake_one(state_);
    }
  }

 private:
  static constexpr std::uint32_t empty = 0;
  static constexpr std::uint32_t notified = 1;
  static constexpr std::uint32_t parked = ~std::uint32_t{0};
  model::atomic<std::uint32_t> state_{empty};
};

template <parker_bug Bug>
void park_unpark_body() {
  test_parker<Bug> p;
  model::thread waker([&] { p.unpark(); });
  p.park();
  waker.join();
}

// ---- a spin lock, correct or releasing with a relaxed store ---------------------------------

enum class lock_bug : std::uint8_t { none, relaxed_unlock };

template <lock_bug Bug>
class test_spinlock {
 public:
  void lock() {
    for (;;) {
      bool expected = false;
      if (locked_.compare_exchange_weak(expected, true, std::memory_order_acquire,
                                        std::memory_order_relaxed)) {
        return;
      }
      model::spin_pause();
    }
  }
  void unlock() {
    locked_.store(false,
                  Bug == lock_bug::none ? std::memory_order_release : std::memory_order_relaxed);
  }

 private:
  model::atomic<bool> locked_{false};
};

template <lock_bug Bug>
void counter_body() {
  test_spinlock<Bug> lock;
  model::plain<int> counter;
  auto work = [&] {
    lock.lock();
    counter.set(counter.get() + 1);
    lock.unlock();
  };
  model::thread a(work);
  model::thread b(work);
  a.join();
  b.join();
  model::check(counter.get() == 2, "an increment was lost");
}

// ---- a fixed-capacity Chase-Lev deque (Chase & Lev, SPAA 2005; Le et al., PPoPP 2013) --------

enum class deque_bug : std::uint8_t { none, relaxed_publish, steal_without_cas, pop_without_fence };

template <deque_bug Bug>
class tiny_deque {
 public:
  void push(int v) {
    auto const b = bottom_.load(std::memory_order_relaxed);
    slots_[static_cast<std::size_t>(b)].set(v);
    bottom_.store(b + 1, Bug == deque_bug::relaxed_publish ? std::memory_order_relaxed
                                                           : std::memory_order_release);
  }
  auto pop() -> int {
    auto const b = bottom_.load(std::memory_order_relaxed) - 1;
    bottom_.store(b, std::memory_order_relaxed);
    if constexpr (Bug != deque_bug::pop_without_fence) {
      model::fence(std::memory_order_seq_cst);
    }
    auto t = top_.load(std::memory_order_relaxed);
    if (t > b) {
      bottom_.store(b + 1, std::memory_order_relaxed);
      return -1;
    }
    if (t == b) {
      bool const won = top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                                    std::memory_order_relaxed);
      bottom_.store(b + 1, std::memory_order_relaxed);
      return won ? slots_[static_cast<std::size_t>(b)].get() : -1;
    }
    return slots_[static_cast<std::size_t>(b)].get();
  }
  auto steal() -> int {
    auto t = top_.load(std::memory_order_acquire);
    model::fence(std::memory_order_seq_cst);
    auto const b = bottom_.load(std::memory_order_acquire);
    if (t >= b) {
      return -1;
    }
    if constexpr (Bug == deque_bug::steal_without_cas) {
      top_.store(t + 1, std::memory_order_seq_cst);
    } else if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                             std::memory_order_relaxed)) {
      return -1;
    }
    // Capacity is never reached in these tests, so a slot is never overwritten and may be
    // read after the claim.
    return slots_[static_cast<std::size_t>(t)].get();
  }

 private:
  model::atomic<long> top_{0};
  model::atomic<long> bottom_{0};
  std::array<model::plain<int>, 8> slots_{};
};

/// Of the results of pop and steal (-1: nothing taken), items 1 and 2 were each taken once.
void check_both_taken_once(std::initializer_list<int> taken) {
  int seen[3] = {0, 0, 0};
  for (int v : taken) {
    if (v > 0) {
      ++seen[v];
    }
  }
  model::check(seen[1] == 1 && seen[2] == 1, "an item was lost or taken twice");
}

template <deque_bug Bug>
void deque_body() {
  tiny_deque<Bug> d;
  d.push(1);
  d.push(2);
  int stolen = -1;
  model::thread thief([&] { stolen = d.steal(); });
  int const a = d.pop();
  int const b = d.pop();
  thief.join();
  check_both_taken_once({a, b, stolen});
}

template <deque_bug Bug>
void deque_two_steals_body() {
  tiny_deque<Bug> d;
  d.push(1);
  d.push(2);
  int first = -1;
  int second = -1;
  model::thread thief([&] {
    first = d.steal();
    second = d.steal();
  });
  int const popped = d.pop();
  thief.join();
  int const rest = d.pop();
  check_both_taken_once({first, second, popped, rest});
}

template <deque_bug Bug>
void deque_publish_body() {
  tiny_deque<Bug> d;
  model::thread thief([&] { static_cast<void>(d.steal()); });
  d.push(1);
  thief.join();
}

/// The correct version passes every schedule of `o` (all of them within the bound when
/// `must_exhaust`), and the version with the seeded bug is caught as `kind`.
void expect_only_the_bug_caught(char const* name, model::options const& o, void (*correct)(),
                                void (*buggy)(), model::failure_kind kind, bool must_exhaust) {
  auto const ok = model::explore(quiet(o), correct);
  EXPECT_TRUE(ok) << ok.message;
  if (must_exhaust) {
    EXPECT_TRUE(ok.exhausted);
  }
  auto const bad = model::explore(quiet(o), buggy);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.failure, kind) << bad.message;
  print_caught(name, bad);
}

}  // namespace

TEST(ModelChecker, Example) {
  // A correct parker passes every schedule; the same parker without the wake is a lost
  // wake-up, reported as a deadlock with the blocked thread and its futex word.
  auto const ok =
      model::explore(quiet(model::exhaustive(2, 10000)), park_unpark_body<parker_bug::none>);
  EXPECT_TRUE(ok) << ok.message;
  EXPECT_TRUE(ok.exhausted);

  auto const bad = model::explore(quiet(model::exhaustive(2, 10000)),
                                  park_unpark_body<parker_bug::unpark_skips_wake>);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.failure, model::failure_kind::deadlock);
  EXPECT_NE(bad.message.find("futex_wait"), std::string::npos) << bad.message;
  print_caught("unpark skips the wake", bad);
}

TEST(ModelChecker, LostWakeUpFoundByRandomAndPct) {
  auto const r = model::explore(quiet(model::random_schedules(3, 1000)),
                                park_unpark_body<parker_bug::unpark_skips_wake>);
  EXPECT_EQ(r.failure, model::failure_kind::deadlock);
  auto const p = model::explore(quiet(model::pct_schedules(3, 1000, 2)),
                                park_unpark_body<parker_bug::unpark_skips_wake>);
  EXPECT_EQ(p.failure, model::failure_kind::deadlock);
}

TEST(ModelChecker, RelaxedUnlockIsADataRace) {
  expect_only_the_bug_caught("relaxed store in unlock", model::exhaustive(2, 100000),
                             counter_body<lock_bug::none>, counter_body<lock_bug::relaxed_unlock>,
                             model::failure_kind::data_race, /*must_exhaust=*/true);
}

TEST(ModelChecker, RelaxedPublishOfASlotIsADataRace) {
  expect_only_the_bug_caught("Chase-Lev push publishes bottom with a relaxed store",
                             model::exhaustive(2, 100000), deque_publish_body<deque_bug::none>,
                             deque_publish_body<deque_bug::relaxed_publish>,
                             model::failure_kind::data_race, /*must_exhaust=*/false);
}

TEST(ModelChecker, StealWithoutCasTakesAnItemTwice) {
  expect_only_the_bug_caught("Chase-Lev steal claims with a store instead of a CAS",
                             model::exhaustive(2, 100000), deque_body<deque_bug::none>,
                             deque_body<deque_bug::steal_without_cas>,
                             model::failure_kind::assertion, /*must_exhaust=*/true);
}

TEST(ModelChecker, MissingFenceInPopNeedsStoreBuffering) {
  // Without the seq_cst fence, pop's store of bottom can sit in the owner's store buffer while
  // a thief reads the old bottom and takes the item the owner is popping. An SC interleaving
  // never shows that; the store-buffer (x86-TSO) mode does.
  auto const sc = model::explore(quiet(model::exhaustive(3, 100000)),
                                 deque_two_steals_body<deque_bug::pop_without_fence>);
  EXPECT_TRUE(sc) << sc.message;
  auto const ok = model::explore(quiet(tso(model::exhaustive(3, 100000))),
                                 deque_two_steals_body<deque_bug::none>);
  EXPECT_TRUE(ok) << ok.message;
  EXPECT_TRUE(ok.exhausted);
  auto const bad = model::explore(quiet(tso(model::exhaustive(3, 100000))),
                                  deque_two_steals_body<deque_bug::pop_without_fence>);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.failure, model::failure_kind::assertion) << bad.message;
  print_caught("Chase-Lev pop without its seq_cst fence (store buffering)", bad);
  auto const random = model::explore(quiet(tso(model::random_schedules(5, 20000))),
                                     deque_two_steals_body<deque_bug::pop_without_fence>);
  EXPECT_FALSE(random);
}

TEST(ModelChecker, SpinningOnAFlagNobodySetsIsALivelock) {
  auto const r = model::explore(quiet(model::random_schedules(1, 10)), [] {
    model::atomic<bool> flag{false};
    model::thread t([&] {
      while (!flag.load(std::memory_order_acquire)) {
        model::spin_pause();
      }
    });
    t.join();
  });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.failure, model::failure_kind::livelock) << r.message;
}

TEST(ModelChecker, JoinCycleIsADeadlock) {
  auto const r = model::explore(quiet(model::random_schedules(1, 10)), [] {
    test_parker<parker_bug::none> p;
    model::thread t([&] { p.park(); });
    t.join();  // nobody unparks
  });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.failure, model::failure_kind::deadlock);
  EXPECT_NE(r.message.find("joining"), std::string::npos) << r.message;
}

TEST(ModelChecker, FailingScheduleReplaysExactly) {
  auto const bad = model::explore(quiet(model::random_schedules(11, 5000)),
                                  deque_body<deque_bug::steal_without_cas>);
  ASSERT_FALSE(bad);
  model::options replay;
  replay.kind = model::strategy::replay;
  replay.schedule = spindle::model::impl::parse_schedule(bad.schedule.c_str());
  auto const again = model::explore(quiet(replay), deque_body<deque_bug::steal_without_cas>);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.failure, bad.failure);
  EXPECT_EQ(again.schedule, bad.schedule);
  EXPECT_EQ(again.executions, 1U);
}

TEST(ModelChecker, ExhaustiveSearchCountsInterleavings) {
  // Two threads, one store each, no preemption bound in practice: the search must visit both
  // orders and stop by itself.
  int orders_seen[2] = {0, 0};
  auto const r = model::explore(model::exhaustive(10, 1000), [&] {
    model::atomic<int> last{0};
    model::thread t([&] { last.store(1, std::memory_order_relaxed); });
    last.store(2, std::memory_order_relaxed);
    t.join();
    ++orders_seen[last.load(std::memory_order_relaxed) - 1];
  });
  EXPECT_TRUE(r) << r.message;
  EXPECT_TRUE(r.exhausted);
  EXPECT_GT(orders_seen[0], 0);
  EXPECT_GT(orders_seen[1], 0);
}

TEST(ModelChecker, BytesDriveTheSchedule) {
  model::options o;
  o.kind = model::strategy::bytes;
  o.bytes = {1, 1, 0, 1, 0, 0, 1};
  auto const r = model::explore(o, deque_body<deque_bug::none>);
  EXPECT_TRUE(r) << r.message;
  EXPECT_EQ(r.executions, 1U);
}
