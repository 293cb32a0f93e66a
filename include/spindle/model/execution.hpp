// SPDX-License-Identifier: BSL-1.0
#pragma once
// One execution of the model checker: the model threads of one run of the body, the token
// that lets exactly one of them run, the scheduling points where the chooser may pass the
// token on, and the checkers (assertions, data races, deadlocks, livelocks).
//
// How it works. Every hook of <spindle/model/atomic.hpp> calls into the running execution
// (current_execution) before its operation: yield() is a scheduling point; after_load(),
// after_store(), after_rmw() and fence() update the vector clocks (race_detector.hpp) from
// the declared memory order; buffer_store(), forwarded() and drain() model x86-TSO store
// buffers (Owens, Sarkar, Sewell, TPHOLs 2009) when options::store_buffering is set;
// futex_wait()/futex_wake() and join() block and wake model threads (threads.hpp); access()
// checks a marked payload access for a data race; metered() reports an operation to the
// coherence meter when options::meter is set (coherence.hpp); location_of() holds each atomic's
// release clock, so that the model's atomic keeps the size of std::atomic. schedule_next()
// collects the candidates (runnable threads, buffered stores that may reach memory, spinners
// that may spin out, and, when nothing else can run, timed waits that may time out), fails the
// execution on a deadlock or livelock, asks the chooser (strategies.hpp) and hands the token
// over.
// The scheduler design follows folly's DeterministicSchedule (folly/test/DeterministicSchedule.h).
//
// Thread safety: see the Synchronization block of `execution`. Progress: blocking; exactly one
// model thread runs at a time. A failed execution is abandoned: its threads stay blocked for
// good and explore() leaks the execution object, so they never touch freed memory.
// Memory: per execution, its thread records, the race detector's map, the memory-order state
// of each atomic it touched (location_of) and a trace of the last 48 events (printed with a
// failure).
// Part of the model checker; include <spindle/model/scheduler.hpp>.

#include <spindle/model/coherence.hpp>
#include <spindle/model/options.hpp>
#include <spindle/model/race_detector.hpp>
#include <spindle/model/strategies.hpp>
#include <spindle/model/threads.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace spindle::model::impl {

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
  execution(options const& opts, chooser& ch) : opts_(opts), chooser_(ch), meter_(opts.meter) {
    // Never reallocated while threads run: operator delete (forget) may walk it.
    threads_.reserve(max_threads);
    if (meter_ != nullptr) {
      meter_->begin_execution();
    }
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
    // weak_memory mode: a spinning thread sees every store made so far before its next step
    // ("stores become visible in a finite time", [atomics.order]/11), so that a spin loop
    // never waits for ever on a value that memory no longer holds.
    threads_[idx(me)]->visible_seq = store_seq_;
    if (spinning_out(me)) {
      return;
    }
    threads_[idx(me)]->spin_epoch = epoch_;
    schedule_next(me);
  }

  /// After a load (or a failed compare-exchange) with order `o`, as data: an acquire joins the
  /// clock that the release store or RMW it read from left on `loc`; a weaker load keeps that
  /// clock for the thread's next acquire fence. `value` is what memory holds; the load returns
  /// the value it reads: the same, or in weak_memory mode the value of the store it chose to
  /// read (read_weak(); `latest`: a failed compare-exchange, which reads memory's value).
  auto after_load(int me, std::memory_order o, void const* addr, std::uint64_t value,
                  char const* what, bool latest = false) -> std::uint64_t {
    auto& loc = location_of(addr);
    auto& t = *threads_[idx(me)];
    vector_clock const* from = &loc.release;
    if (opts_.weak_memory) {
      store_record const& r = read_weak(me, o, loc, value, latest);
      value = r.bits;
      from = &r.release;
    }
    if (is_acquire(o)) {
      t.clock.join(*from);
    } else {
      t.acquire_pending.join(*from);
    }
    note_event(me, what, addr, value, order_name(o));
    return value;
  }

  /// After a load that read the thread's own buffered store (store forwarding): no
  /// synchronisation, only the event.
  void after_forwarded_load(int me, void const* addr, std::uint64_t value) {
    note_event(me, "load (own buffered store)", addr, value, "relaxed");
  }

  /// After a store with order `o`, as data: a release leaves the thread's clock on `loc` for
  /// the acquire loads that will read from it (pairs with after_load / after_rmw). `previous`:
  /// the value it replaced.
  void after_store(int me, std::memory_order o, void const* addr, std::uint64_t value,
                   std::uint64_t previous) {
    auto& loc = location_of(addr);
    auto& t = *threads_[idx(me)];
    // A plain store starts a new release sequence (C++20 [intro.races]): only its own
    // release, or the thread's last release fence, is carried to an acquiring reader.
    loc.release = is_release(o) ? t.clock : t.release_fence;
    if (opts_.weak_memory) {
      record_store(me, o, loc, value, previous);
    }
    ++t.clock[idx(me)];
    wrote();
    note_event(me, "store", addr, value, order_name(o));
  }

  [[nodiscard]] auto buffering() const noexcept -> bool { return opts_.store_buffering; }

  /// Reports operation `op` of thread `me` on [addr, addr + size) to the coherence meter, if
  /// options::meter is set (coherence.hpp).
  void metered(int me, coherence_op op, void const* addr, std::size_t size) {
    if (meter_ != nullptr) {
      meter_->record(me, op, addr, size);
    }
  }

  /// A store that is not seq_cst, in store_buffering mode: it waits in the buffer.
  void buffer_store(int me, std::memory_order o, void* target, void const* object, std::size_t size,
                    std::uint64_t value) {
    auto& loc = location_of(object);
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

  /// The memory-order state of the atomic object at `object` (its release clock), made empty
  /// the first time the execution touches it. Kept here rather than in the object so that the
  /// model's atomic has the size of std::atomic (atomic.hpp). The reference stays valid until
  /// drop_location() or forget() covers the object.
  auto location_of(void const* object) noexcept -> location& {
    return locations_[reinterpret_cast<std::uintptr_t>(object)];
  }

  /// An atomic object dies: its memory-order state goes (the address may hold a new one).
  void drop_location(void const* object) {
    locations_.erase(reinterpret_cast<std::uintptr_t>(object));
  }

  /// An atomic object dies: stores still buffered for it are dropped.
  void drop_buffered(void const* object) {
    for (auto& t : threads_) {
      std::erase_if(t->buffer, [object](buffered_store const& b) { return b.object == object; });
    }
  }

  /// After a read-modify-write with order `o`, as data: its load half acquires as in
  /// after_load(), its store half releases as in after_store(), continuing the release sequence.
  /// It reads the newest value in every memory model ([atomics.order]/10). `previous`: the
  /// value it read.
  void after_rmw(int me, std::memory_order o, void const* addr, std::uint64_t value,
                 char const* what, std::uint64_t previous) {
    auto& loc = location_of(addr);
    auto& t = *threads_[idx(me)];
    if (is_acquire(o)) {
      t.clock.join(loc.release);
    } else {
      t.acquire_pending.join(loc.release);
    }
    // A read-modify-write continues the release sequence it reads from.
    loc.release.join(is_release(o) ? t.clock : t.release_fence);
    if (opts_.weak_memory) {
      record_store(me, o, loc, value, previous);
    }
    ++t.clock[idx(me)];
    wrote();
    note_event(me, what, addr, value, order_name(o));
  }

  /// A fence with order `o`, as data: an acquire fence joins the clocks its thread's relaxed
  /// loads saw; a release fence marks the clock that later relaxed stores carry (pairs with the
  /// other thread's fence or acquire load). The library issues seq_cst fences only.
  void fence(int me, std::memory_order o) {
    // order as data: a seq_cst fence is a full barrier (x86 mfence): the store buffer drains.
    if (o == std::memory_order_seq_cst) {
      drain(me);
      if (opts_.weak_memory) {
        seq_cst_fence_weak(me);
      }
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

  /// The heavy side of an asymmetric fence pair (membarrier(2), MEMBARRIER_CMD_PRIVATE_EXPEDITED):
  /// every thread executes a full barrier at its current point, so every store buffer drains;
  /// then the caller's own seq_cst fence. The light side is a compiler barrier only, which the
  /// model does not see: its stores wait in the buffer like any other.
  void heavy_fence(int me) {
    for (std::size_t t = 0; t < threads_.size(); ++t) {
      drain(static_cast<int>(t));
    }
    if (opts_.weak_memory) {
      // Every thread's barrier at its current point: first each one's stores so far bound the
      // others' later loads, then each one's later loads read at least those (and the caller's).
      for (auto& [key, loc] : locations_) {
        for (std::size_t t = 0; t < threads_.size(); ++t) {
          publish_before_fence(loc, t);
        }
        for (std::size_t t = 0; t < threads_.size(); ++t) {
          read_past_fence(loc, t);
        }
      }
    }
    // seq_cst: the caller's own full barrier, which membarrier(2) also implies for the caller.
    fence(me, std::memory_order_seq_cst);
  }

  /// Returns false when the wait timed out (a scheduler choice for timed waits).
  auto futex_wait(int me, void const* word, std::uint32_t now, std::uint32_t expected, bool timed)
      -> bool {
    auto& t = *threads_[idx(me)];
    // A system call: the kernel compares the word under its own lock, and the thread comes back
    // seeing every store made so far (weak_memory mode; the futex word is read as memory holds
    // it in every mode).
    if (now != expected) {
      t.visible_seq = store_seq_;
      return true;
    }
    t.state = run_state::futex_wait;
    t.wait_word = word;
    t.wait_expected = expected;
    t.timed = timed;
    t.timed_out = false;
    metered(me, coherence_op::futex_wait, word, 0);
    note_event(me, timed ? "futex_wait_until (sleeps)" : "futex_wait (sleeps)", word, now, "");
    schedule_next(me);
    t.visible_seq = store_seq_;
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
    metered(me, coherence_op::futex_wake, word, 0);
    note_event(me, all ? "futex_wake_all" : "futex_wake_one", word,
               static_cast<std::uint64_t>(woken), "");
  }

  void access(int me, void const* addr, std::size_t size, bool is_write) {
    metered(me, is_write ? coherence_op::payload_write : coherence_op::payload_read, addr, size);
    auto const& t = *threads_[idx(me)];
    if (auto const c = races_.access(me, t.clock, addr, is_write)) {
      race(me, addr, is_write ? "write" : "read", c->thread, c->access);
    }
    note_event(me, is_write ? "payload write" : "payload read", addr, 0, "");
  }

  void forget(void const* p, std::size_t n) {
    auto const lo = reinterpret_cast<std::uintptr_t>(p);
    races_.forget(lo, n);
    for (auto& t : threads_) {
      std::erase_if(t->buffer, [lo, n](buffered_store const& b) {
        auto const a = reinterpret_cast<std::uintptr_t>(b.object);
        return a >= lo && a < lo + n;
      });
    }
    locations_.erase(locations_.lower_bound(lo), locations_.lower_bound(lo + n));
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

  /// Registers an invariant evaluated at every quiescent point (scheduler.hpp,
  /// quiescence_invariant); returns its key for remove_invariant().
  auto add_invariant(std::function<char const*()> check) -> std::uint64_t {
    invariants_.emplace_back(++invariant_keys_, std::move(check));
    return invariant_keys_;
  }

  void remove_invariant(std::uint64_t key) {
    std::erase_if(invariants_, [key](auto const& entry) { return entry.first == key; });
  }

  /// The object stored under `key` in this execution (add_local), or nullptr.
  [[nodiscard]] auto local(void const* key) const noexcept -> void* {
    for (auto const& l : locals_) {
      if (l.key == key) {
        return l.object;
      }
    }
    return nullptr;
  }

  /// Stores `object` under `key` for the rest of the execution; `destroy(object)` runs on the
  /// body's thread once the body has returned (scheduler.hpp, execution_local), the newest
  /// first.
  void add_local(void const* key, void* object, void (*destroy)(void*)) {
    locals_.push_back(local_object{key, object, destroy});
  }

  /// Virtual time: the latest instant the code under test let pass (let_time_pass), or the
  /// clock's minimum while it let none pass.
  [[nodiscard]] auto time_passed() const noexcept -> std::chrono::steady_clock::time_point {
    return time_passed_;
  }
  void let_time_pass(std::chrono::steady_clock::time_point t) noexcept {
    time_passed_ = std::max(time_passed_, t);
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

  /// weak_memory mode: gives `loc` a history if it has none; `current`, the value memory held
  /// when the execution first touched the object, is its first entry, which every thread may
  /// read (it happens-before everything of the execution).
  void ensure_history(location& loc, std::uint64_t current) {
    if (loc.history.empty()) {
      store_record r;
      r.index = loc.next_index++;
      r.bits = current;
      r.release = loc.release;
      loc.history.push_back(r);
    }
  }

  /// weak_memory mode: records a store (or the store half of a read-modify-write) of thread
  /// `me` with order `o` in `loc`'s modification order, after every store before it.
  /// Called before the thread's clock ticks for it, with loc.release already the store's.
  void record_store(int me, std::memory_order o, location& loc, std::uint64_t bits,
                    std::uint64_t previous) {
    ensure_history(loc, previous);
    auto& t = *threads_[idx(me)];
    store_record r;
    r.index = loc.next_index++;
    r.seq = ++store_seq_;
    r.bits = bits;
    r.release = loc.release;
    r.thread = me;
    r.epoch = t.clock[idx(me)];
    loc.history.push_back(r);
    std::size_t const keep = std::max<std::uint32_t>(opts_.weak_history, 1);
    if (loc.history.size() > keep) {
      loc.history.erase(loc.history.begin(), loc.history.begin() + static_cast<std::ptrdiff_t>(
                                                                       loc.history.size() - keep));
    }
    loc.seen[idx(me)] = r.index;
    loc.own_write[idx(me)] = r.index + 1;
    // Order as data: a seq_cst store or read-modify-write is the newest seq_cst write of the
    // object in S, the single total order of seq_cst operations (the schedule's order here).
    if (o == std::memory_order_seq_cst) {
      loc.sc_floor = r.index;
    }
  }

  /// weak_memory mode: the store that a load of `loc` by thread `me` with order `o` reads,
  /// chosen (a scheduling choice among read_base + k, k places older than the newest) among
  /// the stores the C++ memory model lets it read and the history still holds. The oldest it
  /// may read is the newest of:
  ///   - the newest store the thread has read or written (read-read and write-read coherence);
  ///   - the newest store that happens-before the load (write-read coherence), and the newest
  ///     the thread has seen since its last spin step or futex call (see spin());
  ///   - for a seq_cst load, the newest seq_cst store ([atomics.order]/3) and the newest store
  ///     sequenced before a seq_cst fence ([atomics.order]/5, S being the schedule's order);
  ///   - after a seq_cst fence of this thread, what seq_cst_fence_weak() raised `seen` to.
  /// `latest`: read the newest (a failed compare-exchange, modelled as the locked instruction
  /// it is on every target).
  auto read_weak(int me, std::memory_order o, location& loc, std::uint64_t current, bool latest)
      -> store_record const& {
    ensure_history(loc, current);
    auto const& t = *threads_[idx(me)];
    auto const& h = loc.history;
    std::uint64_t lo = loc.seen[idx(me)];
    // Order as data: a seq_cst load's extra bounds ([atomics.order]/3 and /5).
    if (o == std::memory_order_seq_cst) {
      lo = std::max({lo, loc.sc_floor, loc.fence_floor});
    }
    for (auto it = h.rbegin(); it != h.rend(); ++it) {
      bool const before = it->thread < 0 || t.clock[idx(it->thread)] >= it->epoch;
      if (before || it->seq <= t.visible_seq) {
        lo = std::max(lo, it->index);
        break;
      }
    }
    std::size_t first = h.size() - 1;
    while (first > 0 && h[first - 1].index >= lo) {
      --first;
    }
    std::size_t pick = h.size() - 1;
    if (!latest && first + 1 < h.size()) {
      candidates_.clear();
      for (std::size_t k = 0; k < h.size() - first; ++k) {
        candidates_.push_back(read_base + static_cast<int>(k));
      }
      int const c = chooser_.pick(candidates_, read_base);
      choices_.push_back(c);
      pick = h.size() - 1 - static_cast<std::size_t>(c - read_base);
    }
    auto const& r = h[pick];
    loc.seen[idx(me)] = std::max(loc.seen[idx(me)], r.index);
    return r;
  }

  /// weak_memory mode: a seq_cst fence of thread `me` ([atomics.order]/4-6, S being the
  /// schedule's order): every store the thread made before it now bounds the seq_cst loads
  /// of every thread and the loads after any later seq_cst fence (fence_floor), and the
  /// thread's own later loads read at least every store made before an earlier seq_cst fence
  /// and the newest seq_cst store of each object.
  void seq_cst_fence_weak(int me) {
    for (auto& [key, loc] : locations_) {
      publish_before_fence(loc, idx(me));
      read_past_fence(loc, idx(me));
    }
  }

  /// weak_memory mode, a seq_cst fence of thread `t`, first half: its last store to `loc`
  /// bounds the seq_cst loads of `loc` and the loads after any later seq_cst fence.
  static void publish_before_fence(location& loc, std::size_t t) noexcept {
    if (loc.own_write[t] > 0) {
      loc.fence_floor = std::max(loc.fence_floor, loc.own_write[t] - 1);
    }
  }

  /// weak_memory mode, a seq_cst fence of thread `t`, second half: its later loads of `loc`
  /// read at least every store published before a seq_cst fence and the newest seq_cst store.
  static void read_past_fence(location& loc, std::size_t t) noexcept {
    loc.seen[t] = std::max({loc.seen[t], loc.fence_floor, loc.sc_floor});
  }

  void flush_one(int t) {
    auto& buf = threads_[idx(t)]->buffer;
    auto const b = buf.front();
    buf.erase(buf.begin());
    std::memcpy(b.target, &b.bits, b.size);
    b.loc->release = b.release;
    wrote();
    note_event(t, "store reaches memory", b.object, b.bits, "");
  }

  /// The body has returned: destroys the execution-local objects, the newest first, on the
  /// body's thread and inside the execution (their destructors are scheduled and checked).
  void destroy_locals() {
    while (!locals_.empty()) {
      auto const l = locals_.back();
      locals_.pop_back();
      l.destroy(l.object);
    }
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
      if (id == 0) {
        destroy_locals();
      }
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
    if (forced && std::none_of(threads_.begin(), threads_.end(),
                               [](auto const& t) { return t->state == run_state::runnable; })) {
      check_quiescent();
    }
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

  /// A quiescent point: every thread is blocked in a futex wait (timed or not) or a join, or
  /// has finished, and no store buffer holds a store. (A spinner is not quiescent: its next
  /// step may be the one that makes progress.) Each invariant reads the state it checks as plain
  /// memory (with no execution current, the atomic hooks run as plain operations and add no
  /// scheduling point); the first broken one fails the execution.
  void check_quiescent() {
    if (invariants_.empty()) {
      return;
    }
    char const* broken = nullptr;
    current_execution = nullptr;
    for (auto const& entry : invariants_) {
      if ((broken = entry.second()) != nullptr) {
        break;
      }
    }
    current_execution = this;
    if (broken != nullptr) {
      fail(failure_kind::assertion,
           std::string("an invariant is broken at a quiescent point: ") + broken);
    }
  }

  options const& opts_;
  chooser& chooser_;
  coherence_meter* meter_;
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
  race_detector races_;
  std::map<std::uintptr_t, location> locations_;  // location_of()
  std::uint64_t epoch_ = 0;
  std::uint64_t store_seq_ = 0;  // stores recorded so far (weak_memory mode)
  std::uint64_t steps_ = 0;
  std::uint64_t forced_spins_ = 0;
  std::array<event, 48> trace_{};
  std::size_t trace_next_ = 0;
  std::vector<std::pair<std::uint64_t, std::function<char const*()>>> invariants_;
  std::uint64_t invariant_keys_ = 0;
  struct local_object {
    void const* key;
    void* object;
    void (*destroy)(void*);
  };
  std::vector<local_object> locals_;
  std::chrono::steady_clock::time_point time_passed_ = std::chrono::steady_clock::time_point::min();
};

}  // namespace spindle::model::impl
