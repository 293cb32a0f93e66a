#pragma once
// Runs one short concurrent history: a few threads start together (a spinning start line), each
// runs its operations on the objects under test and records invoke/response timestamps and results;
// the merged history is returned for the checker.
#include <spindle/detail/sync/config.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "lin/wgl.hpp"

namespace spindle_lin {

/// Records the operations of one thread.
class recorder {
 public:
  explicit recorder(clock& c, std::uint64_t seed = 1) : clock_(c), rng_(seed) {}

  /// Runs `fn` (which fills in the result of `op`) between two timestamps and records it.
  /// Random pauses (a short spin or a yield of the time slice) before the call timestamp and
  /// on both sides of the operation inside its [call, ret] window make the threads' windows
  /// overlap even on a busy two-core machine. A window that is wider than the operation is
  /// sound: the operation's linearization point still lies inside it.
  template <class Fn>
  void record(operation op, Fn fn) {
    pause();
    op.call = clock_.now();
    pause();
    fn(op);
    pause();
    op.ret = clock_.now();
    ops_.push_back(op);
  }
  /// Records a take (recv, pop): the value taken, or `outcome::empty` when `take()` returns
  /// nothing.
  template <class Take>
  void record_take(operation op, Take take) {
    record(op, [&take](operation& x) {
      if (auto v = take()) {
        x.value = *v;
      } else {
        x.result = outcome::empty;
      }
    });
  }
  [[nodiscard]] auto ops() const -> std::vector<operation> const& { return ops_; }

 private:
  void pause() {
    auto const r = rng_();
    if (r % 4 == 0) {
      std::this_thread::yield();
    } else {
      for (auto n = r % 2000; n > 0; --n) {
        sink_ = sink_ + 1;
      }
    }
  }

  clock& clock_;
  std::minstd_rand rng_;
  std::vector<operation> ops_;
  volatile std::uint32_t sink_ = 0;
};

/// Starts one thread per entry of `bodies`, releases them together, joins them, and returns
/// the merged history.
inline auto run_history(std::vector<std::function<void(recorder&)>> const& bodies)
    -> std::vector<operation> {
  clock c;
  static std::atomic<std::uint64_t> seeds{1};
  std::vector<recorder> recorders;
  recorders.reserve(bodies.size());
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    recorders.emplace_back(c, seeds.fetch_add(1, std::memory_order_relaxed));
  }
  // A spinning start line: every thread is running (not waking from a futex) when the
  // history begins, so their first operations really race.
  std::atomic<std::size_t> arrived{0};
  std::vector<std::thread> threads;
  threads.reserve(bodies.size());
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    threads.emplace_back([&, i] {
      arrived.fetch_add(1, std::memory_order_acq_rel);
      while (arrived.load(std::memory_order_acquire) < bodies.size()) {
        std::this_thread::yield();
      }
      bodies[i](recorders[i]);
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  std::vector<operation> history;
  for (auto const& r : recorders) {
    history.insert(history.end(), r.ops().begin(), r.ops().end());
  }
  return history;
}

/// Histories per test: fewer under the sanitizers, where starting a thread costs far more.
#if defined(SPINDLE_TSAN) || defined(__SANITIZE_ADDRESS__)
inline constexpr int histories = 150;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr int histories = 150;
#else
inline constexpr int histories = 400;
#endif
#else
inline constexpr int histories = 400;
#endif

/// Records `histories` histories, the h-th from `run_one(h)` (which builds the objects and
/// returns run_history()'s result), and checks each against `spec_for`. Returns the first one
/// that is not linearizable, or an empty history when all are (then prints how many had
/// overlapping operations).
template <class RunOne, class SpecFor>
auto first_non_linearizable(RunOne run_one, SpecFor spec_for) -> std::vector<operation> {
  int concurrent = 0;
  for (int h = 0; h < histories; ++h) {
    auto history = run_one(h);
    concurrent += has_overlap(history) ? 1 : 0;
    if (!linearizable(history, spec_for)) {
      return history;
    }
  }
  std::printf("[lin] %d histories checked, %d with overlapping operations\n", histories,
              concurrent);
  return {};
}

}  // namespace spindle_lin
