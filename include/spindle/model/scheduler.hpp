#pragma once
// A deterministic scheduler for model-checking code built on spindle's atomic hooks.
//
// What it is. `explore(options, body)` runs `body` many times. In each run (an "execution")
// the body and the threads it starts with `model::thread` are real OS threads, but only one of
// them runs at a time: they hand a token to each other. Before every atomic operation, fence,
// futex call, spin step and thread start/join the running thread stops at a *scheduling point*
// and a strategy picks which thread runs next. Because the only source of nondeterminism is
// that choice, the sequence of choices identifies the execution, and replaying the sequence
// reproduces it exactly. This is the design of folly's DeterministicSchedule
// (folly/test/DeterministicSchedule.h, RESEARCH §6), extended with a race detector, deadlock
// and livelock detection, x86-TSO store buffers and three exploration strategies.
//
// Strategies.
//   random      at each point a uniformly random enabled thread (one seed per execution);
//   pct         Probabilistic Concurrency Testing (Burckhardt, Kothari, Musuvathi, Nagarakatte,
//               "A Randomized Scheduler with Probabilistic Guarantees of Finding Bugs",
//               ASPLOS 2010): random thread priorities, highest enabled runs, and d-1 random
//               change points at which the running thread drops below every other;
//   dfs         every interleaving with at most `preemption_bound` preemptions (switching away
//               from a thread that could have continued), depth first (Musuvathi & Qadeer,
//               "Iterative Context Bounding for Systematic Testing of Multithreaded Programs",
//               PLDI 2007; loom's LOOM_MAX_PREEMPTIONS);
//   replay      one execution that follows a recorded choice sequence;
//   bytes       one execution whose choices come from a byte string (for fuzzers).
// A failing execution prints its choice sequence; SPINDLE_MODEL_REPLAY=<sequence> in the
// environment makes every explore() in the process replay it (select the test with
// --gtest_filter). SPINDLE_MODEL_SEED=<n> overrides the seed of random and pct runs.
//
// What it checks.
//   * `model::check(cond, what)` assertions inside the body and its threads;
//   * data races on plain (non-atomic) memory that the code marks with note_read/note_write:
//     each thread carries a vector clock; happens-before comes from the memory orders the code
//     declares (release/acquire/seq_cst accesses, seq_cst fences acting as acquire+release
//     fences, release sequences continued by read-modify-writes, thread start and join), as in
//     FastTrack (Flanagan & Freund, PLDI 2009). A missing release/acquire pair on a payload is
//     reported even though the execution itself ran on x86;
//   * deadlocks and lost wake-ups: no thread can run while some thread waits in futex_wait
//     (or join) -> failure with the state of every thread;
//   * livelocks: a thread that spins (spin_pause/thread_yield) while no thread has written
//     anything since its last spin step is not scheduled while another thread can run; the
//     scheduler may instead let it "spin out" (run alone, without scheduling points, until a
//     write or 1024 steps), which is how a spin-then-park loop reaches its park. If only
//     spinners remain and they spin `spin_limit` steps without a write, or an execution
//     exceeds `max_steps` scheduling points, it fails as a livelock.
//
// Memory models. By default the scheduler is sequentially consistent: a load returns the
// latest store in the interleaving. With `options::store_buffering` it models x86-TSO (Owens,
// Sarkar, Sewell, "A Better x86 Memory Model: x86-TSO", TPHOLs 2009): a store that is not
// seq_cst waits in a per-thread FIFO buffer, the owning thread reads it from there, and it
// reaches memory when the scheduler picks that buffer (a choice like picking a thread) or at
// the thread's next read-modify-write, seq_cst store, fence, futex call, spawn, join or exit.
// That exposes a missing store->load fence (Dekker handshakes, Chase-Lev pop, park/notify).
//
// Limitations. Weaker-than-TSO outcomes (load->load or store->store reordering, as on arm64,
// or a relaxed load returning a value older than memory's) are never *executed*; the vector
// clocks report the missing synchronisation only where a payload access is marked (note_read/
// note_write), and two seq_cst fences are not taken to synchronise with each other.
// compare_exchange_weak never fails spuriously. Timed waits use virtual time: a thread in
// futex_wait_until may time out whenever the scheduler chooses it. Code under test must be
// deterministic given the schedule (no real clocks or randomness) and must start threads only
// through model::thread. Memory reuse: link <spindle/model/track_allocations.hpp> into the
// program so freed blocks are forgotten by the race detector.
//
// Thread safety: explore() may be called from any thread, one call at a time per thread; the
// hooks in <spindle/model/atomic.hpp> may be called only by threads of a running execution
// (or, outside any execution, by a single thread: they then run as plain operations).

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace spindle::model {

/// Threads per execution, the body included.
inline constexpr std::size_t max_threads = 8;

enum class strategy : std::uint8_t { random, pct, dfs, replay, bytes };

enum class failure_kind : std::uint8_t { none, assertion, data_race, deadlock, livelock, misuse };

inline auto to_string(failure_kind k) noexcept -> char const* {
  switch (k) {
    case failure_kind::none:
      return "none";
    case failure_kind::assertion:
      return "assertion failed";
    case failure_kind::data_race:
      return "data race";
    case failure_kind::deadlock:
      return "deadlock";
    case failure_kind::livelock:
      return "livelock";
    case failure_kind::misuse:
      return "misuse";
  }
  return "?";
}

struct options {
  strategy kind = strategy::random;
  std::uint64_t seed = 1;
  /// Executions to run (dfs stops earlier once every schedule within the bound is done).
  std::uint64_t executions = 1000;
  std::uint32_t pct_depth = 3;
  std::uint32_t preemption_bound = 2;
  std::uint64_t max_steps = 100000;
  std::uint64_t spin_limit = 20000;
  /// x86-TSO store buffers: a store that is not seq_cst waits in its thread's FIFO buffer and
  /// reaches memory when the scheduler chooses to flush it (or at the thread's next
  /// read-modify-write, seq_cst store, fence or futex call); the thread itself reads its own
  /// buffered stores. Catches a missing store->load fence (Dekker, Chase-Lev pop).
  bool store_buffering = false;
  /// Timed waits each thread may see time out by the scheduler's choice while another thread
  /// can still run; beyond that a timed wait ends early only when nothing else can run (time
  /// passes for everyone: an unfair schedule would otherwise time a thread out forever while
  /// starving the thread it waits for).
  std::uint32_t max_timeouts = 2;
  std::vector<int> schedule;        // strategy::replay
  std::vector<std::uint8_t> bytes;  // strategy::bytes
  bool quiet = false;               // do not print the failure (tests that expect one)
  bool use_environment = true;      // honour SPINDLE_MODEL_REPLAY and SPINDLE_MODEL_SEED
};

/// `executions` random schedules, seeded from `seed`.
inline auto random_schedules(std::uint64_t seed, std::uint64_t executions) -> options {
  options o;
  o.kind = strategy::random;
  o.seed = seed;
  o.executions = executions;
  return o;
}

/// `executions` PCT schedules with `depth` (bug depth d: d-1 priority change points).
inline auto pct_schedules(std::uint64_t seed, std::uint64_t executions, std::uint32_t depth)
    -> options {
  options o;
  o.kind = strategy::pct;
  o.seed = seed;
  o.executions = executions;
  o.pct_depth = depth;
  return o;
}

/// Every schedule with at most `preemption_bound` preemptions, up to `max_executions`.
inline auto exhaustive(std::uint32_t preemption_bound, std::uint64_t max_executions) -> options {
  options o;
  o.kind = strategy::dfs;
  o.preemption_bound = preemption_bound;
  o.executions = max_executions;
  return o;
}

/// The outcome of explore(). Converts to true when nothing failed.
struct report {
  failure_kind failure = failure_kind::none;
  std::string message;   // what failed, the state of the threads and the last events
  std::string schedule;  // the failing choice sequence, for SPINDLE_MODEL_REPLAY
  std::uint64_t seed = 0;
  std::uint64_t executions = 0;
  std::uint64_t max_choices = 0;  // the longest choice sequence seen
  bool exhausted = false;         // dfs: every schedule within the bound was run

  explicit operator bool() const noexcept { return failure == failure_kind::none; }
};

namespace impl {

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

/// Per-atomic-object state: the clock a later acquire of this object joins (the last release
/// store, joined with every read-modify-write of its release sequence).
struct location {
  vector_clock release;
};

inline auto is_acquire(std::memory_order o) noexcept -> bool {
  return o == std::memory_order_acquire || o == std::memory_order_acq_rel ||
         o == std::memory_order_seq_cst || o == std::memory_order_consume;
}
inline auto is_release(std::memory_order o) noexcept -> bool {
  return o == std::memory_order_release || o == std::memory_order_acq_rel ||
         o == std::memory_order_seq_cst;
}
inline auto order_name(std::memory_order o) noexcept -> char const* {
  switch (o) {
    case std::memory_order_relaxed:
      return "relaxed";
    case std::memory_order_consume:
      return "consume";
    case std::memory_order_acquire:
      return "acquire";
    case std::memory_order_release:
      return "release";
    case std::memory_order_acq_rel:
      return "acq_rel";
    case std::memory_order_seq_cst:
      return "seq_cst";
  }
  return "?";
}

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

/// A store waiting in a thread's store buffer (store_buffering mode).
struct buffered_store {
  void* target = nullptr;        // the atomic's value
  void const* object = nullptr;  // the atomic
  std::size_t size = 0;
  std::uint64_t bits = 0;
  location* loc = nullptr;
  vector_clock release;  // what loc.release becomes when the store reaches memory
};

/// Candidate ids at or above this flush the store buffer of thread (id - flush_base).
inline constexpr int flush_base = static_cast<int>(max_threads);
/// Candidate ids at or above this let spinning thread (id - spin_out_base) spin out.
inline constexpr int spin_out_base = 2 * static_cast<int>(max_threads);
/// Scheduling points a spinning-out thread may skip (a spin loop's length before it parks).
inline constexpr std::uint32_t spin_out_budget = 1024;

enum class run_state : std::uint8_t { runnable, futex_wait, join_wait, finished };

struct thread_record {
  run_state state = run_state::runnable;
  void const* wait_word = nullptr;
  std::uint32_t wait_expected = 0;
  bool timed = false;
  bool timed_out = false;
  std::uint32_t timeouts = 0;  // timed waits ended by the scheduler in this execution
  int join_target = -1;
  std::uint64_t spin_epoch = ~std::uint64_t{0};
  std::uint64_t spin_out_epoch = 0;
  std::uint32_t spin_out_left = 0;  // > 0 while spinning out
  std::uint64_t spun_out_epoch = ~std::uint64_t{0};
  bool spin_out_forced = false;
  vector_clock clock;
  vector_clock release_fence;          // clock at this thread's last release (seq_cst) fence
  vector_clock acquire_pending;        // release clocks seen by relaxed loads, for a later fence
  std::vector<buffered_store> buffer;  // oldest first (store_buffering mode)
  std::condition_variable wake;        // signalled when the token is handed to this thread
};

/// OS threads reused across executions (creating a thread per model thread per execution
/// dominates the cost, most of all under sanitizers). A thread of an abandoned (failed)
/// execution never comes back; the pool makes a new one when none is idle. The pool itself is
/// never destroyed: idle threads wait in it until the process exits.
class thread_pool {
 public:
  static auto instance() -> thread_pool& {
    static auto* const pool = new thread_pool();
    return *pool;
  }

  void run(std::function<void()> job) {
    std::unique_lock lk(mutex_);
    worker* w = nullptr;
    if (idle_.empty()) {
      w = new worker();
      std::thread([this, w] { loop(w); }).detach();
    } else {
      w = idle_.back();
      idle_.pop_back();
    }
    w->job = std::move(job);
    w->has_job = true;
    w->cv.notify_one();
  }

 private:
  struct worker {
    std::condition_variable cv;
    std::function<void()> job;
    bool has_job = false;
  };

  void loop(worker* w) {
    std::unique_lock lk(mutex_);
    for (;;) {
      w->cv.wait(lk, [w] { return w->has_job; });
      auto job = std::move(w->job);
      w->job = nullptr;
      w->has_job = false;
      lk.unlock();
      job();
      job = nullptr;
      lk.lock();
      idle_.push_back(w);
    }
  }

  std::mutex mutex_;
  std::vector<worker*> idle_;
};

/// A plain-memory access the race detector remembers.
struct shadow {
  int writer = -1;
  std::uint32_t write_epoch = 0;
  std::array<std::uint32_t, max_threads> read_epoch{};
};

struct event {
  int thread = 0;
  char const* what = "";
  void const* addr = nullptr;
  std::uint64_t value = 0;
  char const* order = "";
};

class execution;

inline thread_local execution* current_execution = nullptr;
inline thread_local int current_thread = -1;
inline thread_local bool forgetting = false;

/// One run of the body: the threads, the token, the clocks and the checkers.
///
/// Synchronization: `mutex_` guards `current_`, `done_` and the hand-over of the token; every
/// other field is touched only by the thread holding the token (current_), so each hand-over
/// through `mutex_` orders one holder's accesses before the next holder's.
class execution {
 public:
  execution(options const& opts, chooser& ch) : opts_(opts), chooser_(ch) {
    // Never reallocated while threads run: operator delete (forget) may walk it.
    threads_.reserve(max_threads);
  }
  execution(execution const&) = delete;
  auto operator=(execution const&) -> execution& = delete;

  void start(std::function<void()> body) {
    auto rec = std::make_unique<thread_record>();
    rec->clock[0] = 1;
    threads_.push_back(std::move(rec));
    current_ = 0;
    thread_pool::instance().run(
        [this, body = std::move(body)]() mutable { run_thread(0, std::move(body)); });
  }

  /// Blocks the controller until the execution finished or failed.
  void wait_done() {
    std::unique_lock lk(mutex_);
    cv_.wait(lk, [&] { return done_; });
  }

  /// Waits until every thread of a finished execution has left it.
  void join_all() {
    std::unique_lock lk(mutex_);
    cv_.wait(lk, [&] { return exited_ == threads_.size(); });
  }

  [[nodiscard]] auto failed() const noexcept -> bool { return failure_ != failure_kind::none; }
  [[nodiscard]] auto failure() const noexcept -> failure_kind { return failure_; }
  [[nodiscard]] auto message() const -> std::string const& { return message_; }
  [[nodiscard]] auto choices() const -> std::vector<int> const& { return choices_; }

  // ---- called by the thread holding the token --------------------------------------------

  /// A scheduling point before an operation of thread `me`.
  void yield(int me, char const* what, void const* addr) {
    note_event(me, what, addr, 0, "");
    if (spinning_out(me)) {
      return;
    }
    schedule_next(me);
  }

  void spin(int me, char const* what) {
    note_event(me, what, nullptr, 0, "");
    if (spinning_out(me)) {
      return;
    }
    threads_[idx(me)]->spin_epoch = epoch_;
    schedule_next(me);
  }

  void after_load(int me, location const& loc, std::memory_order o, void const* addr,
                  std::uint64_t value, char const* what) {
    auto& t = *threads_[idx(me)];
    if (is_acquire(o)) {
      t.clock.join(loc.release);
    } else {
      t.acquire_pending.join(loc.release);
    }
    note_event(me, what, addr, value, order_name(o));
  }

  void after_store(int me, location& loc, std::memory_order o, void const* addr,
                   std::uint64_t value) {
    auto& t = *threads_[idx(me)];
    // A plain store starts a new release sequence (C++20 [intro.races]): only its own
    // release, or the thread's last release fence, is carried to an acquiring reader.
    loc.release = is_release(o) ? t.clock : t.release_fence;
    ++t.clock[idx(me)];
    wrote();
    note_event(me, "store", addr, value, order_name(o));
  }

  [[nodiscard]] auto buffering() const noexcept -> bool { return opts_.store_buffering; }

  /// A store that is not seq_cst, in store_buffering mode: it waits in the buffer.
  void buffer_store(int me, location& loc, std::memory_order o, void* target, void const* object,
                    std::size_t size, std::uint64_t value) {
    auto& t = *threads_[idx(me)];
    buffered_store b;
    b.target = target;
    b.object = object;
    b.size = size;
    b.bits = value;
    b.loc = &loc;
    b.release = is_release(o) ? t.clock : t.release_fence;
    t.buffer.push_back(b);
    ++t.clock[idx(me)];
    note_event(me, "store (buffered)", object, value, order_name(o));
  }

  /// The newest buffered store of thread `me` to `object`, if any (store forwarding).
  [[nodiscard]] auto forwarded(int me, void const* object, std::uint64_t& bits) const noexcept
      -> bool {
    auto const& buf = threads_[idx(me)]->buffer;
    for (auto it = buf.rbegin(); it != buf.rend(); ++it) {
      if (it->object == object) {
        bits = it->bits;
        return true;
      }
    }
    return false;
  }

  /// Drains thread `t`'s buffer to memory (before its RMWs, seq_cst stores, fences, futex
  /// calls, thread start/join and exit: all serialising on x86).
  void drain(int t) {
    while (!threads_[idx(t)]->buffer.empty()) {
      flush_one(t);
    }
  }

  /// An atomic object dies: stores still buffered for it are dropped.
  void drop_buffered(void const* object) {
    for (auto& t : threads_) {
      std::erase_if(t->buffer, [object](buffered_store const& b) { return b.object == object; });
    }
  }

  void after_rmw(int me, location& loc, std::memory_order o, void const* addr, std::uint64_t value,
                 char const* what) {
    auto& t = *threads_[idx(me)];
    if (is_acquire(o)) {
      t.clock.join(loc.release);
    } else {
      t.acquire_pending.join(loc.release);
    }
    // A read-modify-write continues the release sequence it reads from.
    loc.release.join(is_release(o) ? t.clock : t.release_fence);
    ++t.clock[idx(me)];
    wrote();
    note_event(me, what, addr, value, order_name(o));
  }

  void fence(int me, std::memory_order o) {
    if (o == std::memory_order_seq_cst) {
      drain(me);
    }
    auto& t = *threads_[idx(me)];
    if (is_acquire(o)) {
      t.clock.join(t.acquire_pending);
    }
    if (is_release(o)) {
      t.release_fence = t.clock;
    }
    ++t.clock[idx(me)];
    note_event(me, "fence", nullptr, 0, order_name(o));
  }

  /// Returns false when the wait timed out (a scheduler choice for timed waits).
  auto futex_wait(int me, void const* word, std::uint32_t now, std::uint32_t expected, bool timed)
      -> bool {
    if (now != expected) {
      return true;
    }
    auto& t = *threads_[idx(me)];
    t.state = run_state::futex_wait;
    t.wait_word = word;
    t.wait_expected = expected;
    t.timed = timed;
    t.timed_out = false;
    note_event(me, timed ? "futex_wait_until (sleeps)" : "futex_wait (sleeps)", word, now, "");
    schedule_next(me);
    return !t.timed_out;
  }

  void futex_wake(int me, void const* word, bool all) {
    int woken = 0;
    for (auto& t : threads_) {
      if (t->state == run_state::futex_wait && t->wait_word == word && (all || woken == 0)) {
        t->state = run_state::runnable;
        t->wait_word = nullptr;
        ++woken;
      }
    }
    if (woken > 0) {
      wrote();
    }
    note_event(me, all ? "futex_wake_all" : "futex_wake_one", word,
               static_cast<std::uint64_t>(woken), "");
  }

  void access(int me, void const* addr, bool is_write) {
    auto const key = reinterpret_cast<std::uintptr_t>(addr);
    auto& t = *threads_[idx(me)];
    auto& s = shadow_[key];
    if (s.writer >= 0 && s.writer != me && s.write_epoch > t.clock[idx(s.writer)]) {
      race(me, addr, is_write ? "write" : "read", s.writer, "write");
    }
    if (is_write) {
      for (std::size_t r = 0; r < max_threads; ++r) {
        if (static_cast<int>(r) != me && s.read_epoch[r] != 0 && s.read_epoch[r] > t.clock[r]) {
          race(me, addr, "write", static_cast<int>(r), "read");
        }
      }
      s.writer = me;
      s.write_epoch = t.clock[idx(me)];
      s.read_epoch.fill(0);
    } else {
      s.read_epoch[idx(me)] = t.clock[idx(me)];
    }
    note_event(me, is_write ? "payload write" : "payload read", addr, 0, "");
  }

  void forget(void const* p, std::size_t n) {
    auto const lo = reinterpret_cast<std::uintptr_t>(p);
    shadow_.erase(shadow_.lower_bound(lo), shadow_.lower_bound(lo + n));
    for (auto& t : threads_) {
      std::erase_if(t->buffer, [lo, n](buffered_store const& b) {
        auto const a = reinterpret_cast<std::uintptr_t>(b.object);
        return a >= lo && a < lo + n;
      });
    }
  }

  auto spawn(int me, std::function<void()> fn) -> int {
    yield(me, "spawn", nullptr);
    if (threads_.size() >= max_threads) {
      fail(failure_kind::misuse, "more than max_threads model threads in one execution");
    }
    drain(me);
    int const id = static_cast<int>(threads_.size());
    auto rec = std::make_unique<thread_record>();
    auto& parent = *threads_[idx(me)];
    rec->clock = parent.clock;
    rec->clock[idx(id)] = 1;
    ++parent.clock[idx(me)];
    threads_.push_back(std::move(rec));
    wrote();
    thread_pool::instance().run(
        [this, id, fn = std::move(fn)]() mutable { run_thread(id, std::move(fn)); });
    return id;
  }

  void join(int me, int target) {
    yield(me, "join", nullptr);
    drain(me);
    auto& t = *threads_[idx(me)];
    if (threads_[idx(target)]->state != run_state::finished) {
      t.state = run_state::join_wait;
      t.join_target = target;
      schedule_next(me);
    }
    t.clock.join(threads_[idx(target)]->clock);
  }

  [[noreturn]] void fail(failure_kind kind, std::string const& what) {
    std::string msg = std::string(to_string(kind)) + ": " + what + "\n" + describe();
    std::unique_lock lk(mutex_);
    failure_ = kind;
    message_ = std::move(msg);
    done_ = true;
    cv_.notify_all();
    // The execution is abandoned: this thread and every other one stay blocked for good and
    // the controller detaches them, so nothing of this execution runs again.
    for (;;) {
      threads_[idx(current_)]->wake.wait(lk);
    }
  }

  void misuse_if_diverged() {
    if (chooser_.diverged()) {
      fail(failure_kind::misuse,
           "the code under test made different choices on the same schedule (it must be "
           "deterministic given the schedule)");
    }
  }

 private:
  static auto idx(int t) noexcept -> std::size_t { return static_cast<std::size_t>(t); }

  void flush_one(int t) {
    auto& buf = threads_[idx(t)]->buffer;
    auto const b = buf.front();
    buf.erase(buf.begin());
    std::memcpy(b.target, &b.bits, b.size);
    b.loc->release = b.release;
    wrote();
    note_event(t, "store reaches memory", b.object, b.bits, "");
  }

  void wrote() noexcept {
    ++epoch_;
    forced_spins_ = 0;
  }

  void run_thread(int id, std::function<void()> fn) {
    current_execution = this;
    current_thread = id;
    {
      std::unique_lock lk(mutex_);
      threads_[idx(id)]->wake.wait(lk, [&] { return current_ == id; });
    }
    try {
      fn();
      // The function object (and whatever it captured, e.g. channel handles) dies inside the
      // execution, where its destructors are scheduled and checked like any other code.
      fn = nullptr;
    } catch (...) {
      fail(failure_kind::assertion, "uncaught exception in model thread " + std::to_string(id));
    }
    finish(id);
    current_execution = nullptr;
    current_thread = -1;
    // Last touch of this execution by this thread: the controller may free it right after.
    std::lock_guard lk(mutex_);
    ++exited_;
    cv_.notify_all();
  }

  void finish(int me) {
    drain(me);
    note_event(me, "exit", nullptr, 0, "");
    threads_[idx(me)]->state = run_state::finished;
    for (auto& t : threads_) {
      if (t->state == run_state::join_wait && t->join_target == me) {
        t->state = run_state::runnable;
      }
    }
    wrote();
    bool const all_done = std::all_of(threads_.begin(), threads_.end(), [](auto const& t) {
      return t->state == run_state::finished;
    });
    if (all_done) {
      std::lock_guard lk(mutex_);
      done_ = true;
      cv_.notify_all();
      return;
    }
    schedule_next(me);
  }

  /// A thread the scheduler let "spin out" runs alone, with no scheduling points, while nothing
  /// is written and its budget lasts: the schedule in which its spin loop runs to its end (for
  /// example into a futex_wait) while every other thread is descheduled.
  auto spinning_out(int me) -> bool {
    auto& t = *threads_[idx(me)];
    if (t.spin_out_left == 0) {
      return false;
    }
    if (t.spin_out_epoch != epoch_) {
      t.spin_out_left = 0;  // someone wrote: back to normal scheduling
      return false;
    }
    if (--t.spin_out_left == 0) {
      t.spin_epoch = epoch_;  // budget spent: it waits for a write like any spinner
      return false;
    }
    if (t.spin_out_forced && ++forced_spins_ > opts_.spin_limit) {
      fail(failure_kind::livelock, "a thread spins with no thread writing anything");
    }
    return true;
  }

  [[nodiscard]] auto enabled(thread_record const& t) const noexcept -> bool {
    return (t.state == run_state::runnable && t.spin_epoch != epoch_) ||
           (t.state == run_state::futex_wait && t.timed && t.timeouts < opts_.max_timeouts);
  }

  void schedule_next(int me) {
    if (++steps_ > opts_.max_steps) {
      fail(failure_kind::livelock,
           "more than " + std::to_string(opts_.max_steps) + " scheduling points in one execution");
    }
    misuse_if_diverged();
    candidates_.clear();
    for (std::size_t i = 0; i < threads_.size(); ++i) {
      if (enabled(*threads_[i])) {
        candidates_.push_back(static_cast<int>(i));
      }
    }
    for (std::size_t i = 0; i < threads_.size(); ++i) {
      if (!threads_[i]->buffer.empty()) {
        candidates_.push_back(flush_base + static_cast<int>(i));
      }
    }
    bool const forced = candidates_.empty();
    // Spinners that wait for a write: the scheduler may still let one spin out (above), once
    // per write unless nothing else can run (fair schedules only: a spinner does not starve
    // the thread it waits for).
    for (std::size_t i = 0; i < threads_.size(); ++i) {
      auto const& t = *threads_[i];
      if (t.state == run_state::runnable && t.spin_epoch == epoch_ &&
          (forced || t.spun_out_epoch != epoch_)) {
        candidates_.push_back(spin_out_base + static_cast<int>(i));
      }
    }
    if (candidates_.empty()) {
      // Nothing can run: real time would pass, so a timed wait may end.
      for (std::size_t i = 0; i < threads_.size(); ++i) {
        if (threads_[i]->state == run_state::futex_wait && threads_[i]->timed) {
          candidates_.push_back(static_cast<int>(i));
        }
      }
    }
    if (candidates_.empty()) {
      fail(failure_kind::deadlock, "no thread can run (a lost wake-up or a lock cycle)");
    }
    if (forced && ++forced_spins_ > opts_.spin_limit) {
      fail(failure_kind::livelock, "threads spin with no thread writing anything");
    }
    int next = candidates_.front();
    if (candidates_.size() > 1) {
      next = chooser_.pick(candidates_, me);
      choices_.push_back(next);
    }
    if (next >= spin_out_base) {
      next -= spin_out_base;
      auto& t = *threads_[idx(next)];
      t.spin_out_left = spin_out_budget;
      t.spin_out_epoch = epoch_;
      t.spun_out_epoch = epoch_;
      t.spin_out_forced = forced;
    } else if (next >= flush_base) {
      // The memory system takes a step: the oldest buffered store of that thread lands.
      flush_one(next - flush_base);
      schedule_next(me);
      return;
    }
    auto& n = *threads_[idx(next)];
    if (n.state == run_state::futex_wait) {
      // Virtual time: the scheduler chose to let the deadline pass.
      n.state = run_state::runnable;
      n.timed_out = true;
      ++n.timeouts;
      n.wait_word = nullptr;
    }
    if (next == me) {
      return;
    }
    std::unique_lock lk(mutex_);
    current_ = next;
    threads_[idx(next)]->wake.notify_one();
    if (threads_[idx(me)]->state == run_state::finished) {
      return;
    }
    threads_[idx(me)]->wake.wait(lk, [&] { return current_ == me; });
  }

  void note_event(int me, char const* what, void const* addr, std::uint64_t value,
                  char const* order) {
    trace_[trace_next_ % trace_.size()] = event{me, what, addr, value, order};
    ++trace_next_;
  }

  void race(int me, void const* addr, char const* mine, int other, char const* theirs) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "%s by thread %d of %p is not ordered (happens-before) with the %s by thread "
                  "%d; a release/acquire pair is missing",
                  mine, me, addr, theirs, other);
    fail(failure_kind::data_race, buf);
  }

  [[nodiscard]] auto describe() const -> std::string {
    std::string out = "threads:\n";
    char buf[256];
    for (std::size_t i = 0; i < threads_.size(); ++i) {
      auto const& t = *threads_[i];
      switch (t.state) {
        case run_state::runnable:
          std::snprintf(buf, sizeof buf, "  thread %zu: %s\n", i,
                        static_cast<int>(i) == current_ ? "running" : "runnable");
          break;
        case run_state::futex_wait:
          std::snprintf(buf, sizeof buf, "  thread %zu: blocked in futex_wait%s on %p (value %u)\n",
                        i, t.timed ? "_until" : "", t.wait_word, t.wait_expected);
          break;
        case run_state::join_wait:
          std::snprintf(buf, sizeof buf, "  thread %zu: blocked joining thread %d\n", i,
                        t.join_target);
          break;
        case run_state::finished:
          std::snprintf(buf, sizeof buf, "  thread %zu: finished\n", i);
          break;
      }
      out += buf;
    }
    out += "last events (oldest first):\n";
    std::size_t const n = std::min<std::size_t>(trace_next_, trace_.size());
    for (std::size_t k = trace_next_ - n; k < trace_next_; ++k) {
      auto const& e = trace_[k % trace_.size()];
      std::snprintf(buf, sizeof buf, "  t%d %-26s %-16p %-8s %llu\n", e.thread, e.what, e.addr,
                    e.order, static_cast<unsigned long long>(e.value));
      out += buf;
    }
    return out;
  }

  options const& opts_;
  chooser& chooser_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int current_ = -1;
  bool done_ = false;
  std::size_t exited_ = 0;
  failure_kind failure_ = failure_kind::none;
  std::string message_;
  std::vector<std::unique_ptr<thread_record>> threads_;
  std::vector<int> candidates_;
  std::vector<int> choices_;
  std::map<std::uintptr_t, shadow> shadow_;
  std::uint64_t epoch_ = 0;
  std::uint64_t steps_ = 0;
  std::uint64_t forced_spins_ = 0;
  std::array<event, 48> trace_{};
  std::size_t trace_next_ = 0;
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
  switch (s) {
    case strategy::random:
      return "random";
    case strategy::pct:
      return "pct";
    case strategy::dfs:
      return "dfs";
    case strategy::replay:
      return "replay";
    case strategy::bytes:
      return "bytes";
  }
  return "?";
}

[[noreturn]] inline void outside_execution(char const* what) {
  std::fprintf(stderr, "spindle::model: %s called outside a model execution\n", what);
  std::abort();
}

}  // namespace impl

/// Runs `body` under the scheduler according to `opts` and reports the first failure.
///
/// The body runs as model thread 0 and may start threads with model::thread (it must join
/// them). It must build its own state on each call: every execution starts from scratch.
inline auto explore(options opts, std::function<void()> const& body) -> report {
  report r;
  auto ch = impl::make_chooser(opts);
  for (std::uint64_t i = 0; i < opts.executions; ++i) {
    ch->begin(i);
    auto ex = std::make_unique<impl::execution>(opts, *ch);
    ex->start(body);
    ex->wait_done();
    ++r.executions;
    r.max_choices = std::max<std::uint64_t>(r.max_choices, ex->choices().size());
    if (ex->failed()) {
      r.failure = ex->failure();
      r.schedule = impl::format_schedule(ex->choices());
      r.seed = ch->seed();
      char head[160];
      std::snprintf(head, sizeof head, "execution %llu (strategy %s, seed %llu)\n",
                    static_cast<unsigned long long>(i), impl::strategy_name(opts.kind),
                    static_cast<unsigned long long>(r.seed));
      r.message = ex->message() + head + "replay: SPINDLE_MODEL_REPLAY=" + r.schedule + "\n";
      if (!opts.quiet) {
        std::fprintf(stderr, "spindle::model: %s", r.message.c_str());
      }
      // The abandoned threads still wait on this execution's mutex: it must outlive them.
      static_cast<void>(ex.release());
      return r;
    }
    ex->join_all();
    if (!ch->finish()) {
      r.exhausted = opts.kind == strategy::dfs;
      break;
    }
  }
  return r;
}

/// Fails the running execution with `what` unless `cond` holds. Outside an execution, aborts.
inline void check(bool cond, char const* what) {
  if (cond) {
    return;
  }
  if (auto* ex = impl::current_execution; ex != nullptr) {
    ex->fail(failure_kind::assertion, what);
  }
  std::fprintf(stderr, "spindle::model: check failed outside an execution: %s\n", what);
  std::abort();
}

/// A thread of the running execution. Must be joined before it is destroyed.
class thread {
 public:
  template <class Fn>
  explicit thread(Fn fn) {
    auto* ex = impl::current_execution;
    if (ex == nullptr) {
      impl::outside_execution("model::thread");
    }
    id_ = ex->spawn(impl::current_thread, std::function<void()>(std::move(fn)));
  }
  thread(thread const&) = delete;
  auto operator=(thread const&) -> thread& = delete;
  ~thread() {
    if (!joined_) {
      check(false, "model::thread destroyed without join()");
    }
  }

  void join() {
    auto* ex = impl::current_execution;
    if (ex == nullptr) {
      impl::outside_execution("model::thread::join");
    }
    ex->join(impl::current_thread, id_);
    joined_ = true;
  }

 private:
  int id_ = -1;
  bool joined_ = false;
};

/// Drops the race detector's memory of [p, p + size): the storage was freed and may be reused.
/// <spindle/model/track_allocations.hpp> calls it from operator delete.
inline void forget_memory(void const* p, std::size_t size) noexcept {
  auto* ex = impl::current_execution;
  if (ex == nullptr || impl::forgetting || p == nullptr) {
    return;
  }
  impl::forgetting = true;
  ex->forget(p, size);
  impl::forgetting = false;
}

}  // namespace spindle::model
