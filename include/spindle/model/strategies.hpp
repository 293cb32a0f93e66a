// SPDX-License-Identifier: BSL-1.0
#pragma once
// The model checker's exploration strategies: at a scheduling point with two or more enabled
// candidates, a chooser picks the one that runs next.
//
// Strategies (selected by options::kind, see make_chooser()):
//   random   a uniformly random candidate; one seed per execution, derived from options::seed;
//   pct      Probabilistic Concurrency Testing (Burckhardt, Kothari, Musuvathi, Nagarakatte,
//            "A Randomized Scheduler with Probabilistic Guarantees of Finding Bugs",
//            ASPLOS 2010): random priorities, the highest enabled candidate runs, and d-1
//            random change points drop the running thread below every other;
//   dfs      every schedule with at most options::preemption_bound preemptions, depth first
//            (Musuvathi & Qadeer, "Iterative Context Bounding for Systematic Testing of
//            Multithreaded Programs", PLDI 2007): a stack of choice points, each remembering
//            its candidates and which it has tried; finish() backtracks to the next untried one;
//   replay   the recorded choice sequence of a failing execution (SPINDLE_MODEL_REPLAY);
//   bytes    choices read from a byte string, for fuzzers.
// A chooser also detects code that is not deterministic given the schedule (diverged()).
//
// Thread safety: none of its own; the execution calls its chooser only from the thread that
// holds the token, and explore() calls begin()/finish() between executions.
// Memory: dfs keeps one frame per choice point of the current execution; the others O(1).
// Part of the model checker; include <spindle/model/scheduler.hpp>.

#include <spindle/model/options.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace spindle::model::impl {

/// Candidate ids at or above this, at a load's choice point (weak_memory mode), read the store
/// (id - read_base) places older than the newest one the load may read; the thread ids, the
/// flush and the spin-out candidates (threads.hpp) lie below it.
inline constexpr int read_base = 3 * static_cast<int>(max_threads);

inline auto mix(std::uint64_t x) noexcept -> std::uint64_t {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27U)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31U);
}

class rng {
 public:
  explicit rng(std::uint64_t seed) noexcept : s_(seed) {}
  auto next() noexcept -> std::uint64_t {
    s_ += 0x9e3779b97f4a7c15ULL;
    return mix(s_);
  }
  auto below(std::uint64_t n) noexcept -> std::uint64_t { return next() % n; }

 private:
  std::uint64_t s_;
};

/// Picks the next thread at a scheduling point with two or more candidates.
class chooser {
 public:
  chooser() = default;
  chooser(chooser const&) = delete;
  auto operator=(chooser const&) -> chooser& = delete;
  virtual ~chooser() = default;
  virtual void begin(std::uint64_t execution) = 0;
  /// `candidates` is sorted and has at least two entries; `current` is the thread that reached
  /// the point (it may be blocked, and then is not a candidate).
  virtual auto pick(std::vector<int> const& candidates, int current) -> int = 0;
  /// Called after a successful execution; false when there is nothing left to explore.
  virtual auto finish() -> bool = 0;
  [[nodiscard]] virtual auto seed() const -> std::uint64_t { return 0; }
  [[nodiscard]] virtual auto diverged() const -> bool { return false; }
};

class random_chooser final : public chooser {
 public:
  explicit random_chooser(std::uint64_t seed) : base_(seed) {}
  void begin(std::uint64_t execution) override {
    seed_ = mix(base_ ^ mix(execution));
    rng_ = rng(seed_);
  }
  auto pick(std::vector<int> const& candidates, int /*current*/) -> int override {
    return candidates[rng_.below(candidates.size())];
  }
  auto finish() -> bool override { return true; }
  [[nodiscard]] auto seed() const -> std::uint64_t override { return seed_; }

 private:
  std::uint64_t base_;
  std::uint64_t seed_ = 0;
  rng rng_{0};
};

class pct_chooser final : public chooser {
 public:
  pct_chooser(std::uint64_t seed, std::uint32_t depth) : base_(seed), depth_(depth) {}
  void begin(std::uint64_t execution) override {
    seed_ = mix(base_ ^ mix(execution) ^ 0x5043ULL);
    rng_ = rng(seed_);
    priority_.fill(0);
    change_points_.clear();
    for (std::uint32_t i = 1; i < depth_; ++i) {
      change_points_.push_back(1 + rng_.below(estimated_length_));
    }
    step_ = 0;
  }
  auto pick(std::vector<int> const& candidates, int current) -> int override {
    if (candidates.front() >= read_base) {
      // Which store a load reads (weak_memory mode): no thread priority decides it.
      return candidates[rng_.below(candidates.size())];
    }
    ++step_;
    for (std::size_t i = 0; i < change_points_.size(); ++i) {
      if (change_points_[i] == step_ && current >= 0) {
        // Below every initial priority (those start at depth_), in change-point order.
        priority_[static_cast<std::size_t>(current)] = i + 1;
      }
    }
    int best = candidates.front();
    for (int t : candidates) {
      auto& p = priority_[static_cast<std::size_t>(t)];
      if (p == 0) {
        p = depth_ + 1 + (rng_.next() >> 8U);
      }
      if (p > priority_[static_cast<std::size_t>(best)]) {
        best = t;
      }
    }
    return best;
  }
  auto finish() -> bool override {
    estimated_length_ = std::max(estimated_length_, step_);
    return true;
  }
  [[nodiscard]] auto seed() const -> std::uint64_t override { return seed_; }

 private:
  std::uint64_t base_;
  std::uint64_t depth_;
  std::uint64_t seed_ = 0;
  rng rng_{0};
  std::array<std::uint64_t, 3 * max_threads> priority_{};
  std::vector<std::uint64_t> change_points_;
  std::uint64_t step_ = 0;
  std::uint64_t estimated_length_ = 32;
};

class dfs_chooser final : public chooser {
 public:
  explicit dfs_chooser(std::uint32_t bound) : bound_(bound) {}
  void begin(std::uint64_t /*execution*/) override {
    pos_ = 0;
    diverged_ = false;
  }
  auto pick(std::vector<int> const& candidates, int current) -> int override {
    bool const current_can_run =
        std::find(candidates.begin(), candidates.end(), current) != candidates.end();
    if (pos_ < stack_.size()) {
      auto& f = stack_[pos_++];
      if (f.candidates != candidates || f.current != current) {
        diverged_ = true;  // the code under test is not deterministic given the schedule
        return candidates.front();
      }
      return f.order[f.index];
    }
    frame f;
    f.candidates = candidates;
    f.current = current;
    f.current_can_run = current_can_run;
    // The thread that reached the point goes first: continuing is not a preemption.
    if (current_can_run) {
      f.order.push_back(current);
    }
    for (int t : candidates) {
      if (t != current) {
        f.order.push_back(t);
      }
    }
    f.preemptions_before = stack_.empty() ? 0 : stack_.back().preemptions_after();
    stack_.push_back(std::move(f));
    ++pos_;
    return stack_.back().order.front();
  }
  auto finish() -> bool override {
    stack_.resize(pos_);
    while (!stack_.empty()) {
      auto& f = stack_.back();
      if (f.index + 1 < f.order.size() &&
          (!f.current_can_run || f.preemptions_before + 1 <= bound_)) {
        ++f.index;
        return true;
      }
      stack_.pop_back();
    }
    return false;
  }
  [[nodiscard]] auto diverged() const -> bool override { return diverged_; }

 private:
  struct frame {
    std::vector<int> candidates;
    std::vector<int> order;
    std::size_t index = 0;
    int current = -1;
    bool current_can_run = false;
    std::uint32_t preemptions_before = 0;
    [[nodiscard]] auto preemptions_after() const -> std::uint32_t {
      return preemptions_before + ((current_can_run && index != 0) ? 1U : 0U);
    }
  };
  std::uint32_t bound_;
  std::vector<frame> stack_;
  std::size_t pos_ = 0;
  bool diverged_ = false;
};

class replay_chooser final : public chooser {
 public:
  explicit replay_chooser(std::vector<int> schedule) : schedule_(std::move(schedule)) {}
  void begin(std::uint64_t /*execution*/) override { pos_ = 0; }
  auto pick(std::vector<int> const& candidates, int /*current*/) -> int override {
    if (pos_ < schedule_.size()) {
      int const want = schedule_[pos_++];
      if (std::find(candidates.begin(), candidates.end(), want) != candidates.end()) {
        return want;
      }
      diverged_ = true;
    }
    return candidates.front();
  }
  auto finish() -> bool override { return false; }
  [[nodiscard]] auto diverged() const -> bool override { return diverged_; }

 private:
  std::vector<int> schedule_;
  std::size_t pos_ = 0;
  bool diverged_ = false;
};

class bytes_chooser final : public chooser {
 public:
  explicit bytes_chooser(std::vector<std::uint8_t> bytes) : bytes_(std::move(bytes)) {}
  void begin(std::uint64_t /*execution*/) override { pos_ = 0; }
  auto pick(std::vector<int> const& candidates, int current) -> int override {
    if (pos_ < bytes_.size()) {
      return candidates[bytes_[pos_++] % candidates.size()];
    }
    // Out of bytes: keep running the current thread where possible, so the run ends quickly.
    auto const it = std::find(candidates.begin(), candidates.end(), current);
    return it != candidates.end() ? current : candidates.front();
  }
  auto finish() -> bool override { return false; }

 private:
  std::vector<std::uint8_t> bytes_;
  std::size_t pos_ = 0;
};

inline auto parse_schedule(char const* text) -> std::vector<int> {
  std::vector<int> out;
  while (*text != '\0') {
    char* end = nullptr;
    long const v = std::strtol(text, &end, 10);
    if (end == text) {
      ++text;
      continue;
    }
    out.push_back(static_cast<int>(v));
    text = end;
  }
  return out;
}

inline auto format_schedule(std::vector<int> const& choices) -> std::string {
  std::string out;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i != 0) {
      out += ',';
    }
    out += std::to_string(choices[i]);
  }
  return out;
}

inline auto make_chooser(options& o) -> std::unique_ptr<chooser> {
  if (o.use_environment) {
    if (char const* replay = std::getenv("SPINDLE_MODEL_REPLAY"); replay != nullptr) {
      o.kind = strategy::replay;
      o.schedule = parse_schedule(replay);
    } else if (char const* seed = std::getenv("SPINDLE_MODEL_SEED"); seed != nullptr) {
      o.seed = std::strtoull(seed, nullptr, 0);
    }
  }
  switch (o.kind) {
    case strategy::random:
      return std::make_unique<random_chooser>(o.seed);
    case strategy::pct:
      return std::make_unique<pct_chooser>(o.seed, o.pct_depth);
    case strategy::dfs:
      return std::make_unique<dfs_chooser>(o.preemption_bound);
    case strategy::replay:
      o.executions = 1;
      return std::make_unique<replay_chooser>(o.schedule);
    case strategy::bytes:
      o.executions = 1;
      return std::make_unique<bytes_chooser>(o.bytes);
  }
  return nullptr;
}

inline auto strategy_name(strategy s) -> char const* {
  // In the order of the enumerators.
  constexpr std::array<char const*, 5> names{"random", "pct", "dfs", "replay", "bytes"};
  auto const i = static_cast<std::size_t>(s);
  return i < names.size() ? names[i] : "?";
}

}  // namespace spindle::model::impl
