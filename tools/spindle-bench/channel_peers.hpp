#pragma once
// Queue adapters for the channel scenarios of spindle-bench: spindle's channels and the peers
// found at configure time (see cmake/spindle_peers.cmake), behind one small interface so that
// every implementation runs the same producer and consumer loops.
//
// An adapter `Q` is constructed as `Q(capacity, total)` where `total` is the number of
// messages the consumers take in all, or, where it sizes itself by its producers (spindle's
// lanes channel), as `Q(capacity, total, producers)`; make_queue() picks the one it has. It
// offers:
//   make_producer() -> object with push(u64); destroying it says "this producer is done".
//   make_consumer() -> object with pop(u64&) -> bool; false means end of stream.
//   seal()          called once after every handle is made and before the start gate opens.
// The static members `key` (for --only), `name`, `note` and `fifo` (whether per-producer FIFO
// holds for each consumer, and the harness checks it) describe the row; an adapter with
// `single_producer_single_consumer` is listed only where the scenario has one of each, and one
// with `several_producers` only where it has more than one thread on some side (and not in
// the ping-pong, whose queues have one producer each).
//
// End of stream. spindle uses its natural API: each producer owns a sender, the last sender
// destroyed closes the channel, and recv() returns nullopt once it is drained. The mutex
// queue closes the same way. Peers without close stop by count instead: consumers claim
// messages from a shared counter in batches of `claim_batch` (one atomic add per 64
// messages), then pop exactly that many, so no consumer waits for a message that never comes
// and the per-message work stays a push and a pop, as for spindle. Messages are never 0
// (atomic_queue reserves 0 as its empty marker).
//
// Waiting. Peers with a blocking pop use it (std::condition_variable, oneTBB's
// concurrent_bounded_queue, moodycamel's wait_dequeue). boost::lockfree has none, so it
// spins with a pause instruction, then yields the processor (`spin_then_yield`); so does
// xenium's vyukov_bounded_queue, which offers only try_push/try_pop. atomic_queue
// is run with its own push()/pop(), which busy-wait on the slot (its intended use); the
// table notes "spinning".

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <spindle/channel.hpp>

#include "bench/support/peers.hpp"
#include "bench_common.hpp"

namespace spindle_bench::channel {

using u64 = std::uint64_t;

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

/// Spin with a pause instruction for a while, then give the processor away on every step:
/// the waiting policy for peers without a blocking call.
class spin_then_yield {
 public:
  void wait() noexcept {
    if (spins_ < spin_limit) {
      ++spins_;
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }

 private:
  static constexpr int spin_limit = 128;
  int spins_ = 0;
};

inline constexpr u64 claim_batch = 64;

/// End of stream by count: consumers claim batches of messages from `claimed_` before popping
/// them, and stop once every message has been claimed.
class counted_end {
 public:
  explicit counted_end(u64 total) : total_(total) {}

  /// Claims up to claim_batch more messages; returns how many (0 = all have been claimed).
  auto claim() noexcept -> u64 {
    // relaxed: the counter only partitions message counts; messages travel through the queue.
    auto const first = claimed_.fetch_add(claim_batch, std::memory_order_relaxed);
    return first >= total_ ? 0 : std::min(claim_batch, total_ - first);
  }

 private:
  u64 total_;
  alignas(128) std::atomic<u64> claimed_{0};
};

/// A counted consumer over an adapter with a waiting pop: `Q::wait_pop(u64&)`.
template <class Q>
class counted_consumer {
 public:
  explicit counted_consumer(Q& q) : q_(&q) {}

  auto pop(u64& out) -> bool {
    if (left_ == 0) {
      left_ = q_->end().claim();
      if (left_ == 0) {
        return false;
      }
    }
    q_->wait_pop(out);
    --left_;
    return true;
  }

 private:
  Q* q_;
  u64 left_ = 0;
};

/// A producer handle over an adapter with a waiting push: `Q::wait_push(u64)`.
template <class Q>
class plain_producer {
 public:
  explicit plain_producer(Q& q) : q_(&q) {}
  void push(u64 v) { q_->wait_push(v); }

 private:
  Q* q_;
};

// ---------------------------------------------------------------------------------------------
// spindle

/// A producer over a spindle sender handle (`Sender`: sender<u64> or spsc_sender<u64>): each
/// producer owns its handle, and destroying the last one closes the channel.
template <class Sender>
class spindle_producer {
 public:
  explicit spindle_producer(Sender tx) : tx_(std::move(tx)) {}
  void push(u64 v) {
    if (!tx_.send(v)) {
      fail("spindle send() failed on an open channel");
    }
  }

 private:
  Sender tx_;
};

/// A consumer over a spindle receiver handle: recv() until the channel is closed and drained.
template <class Receiver>
class spindle_consumer {
 public:
  explicit spindle_consumer(Receiver rx) : rx_(std::move(rx)) {}
  auto pop(u64& out) -> bool {
    auto v = rx_.recv();
    if (!v) {
      return false;
    }
    out = *v;
    return true;
  }

 private:
  Receiver rx_;
};

template <bool Bounded>
class spindle_channel {
 public:
  static constexpr std::string_view key = Bounded ? "spindle" : "spindle-unbounded";
  static constexpr std::string_view name = Bounded ? "spindle bounded" : "spindle unbounded";
  static constexpr bool fifo = true;

  static auto note(std::size_t capacity) -> std::string {
    if (!Bounded) {
      return "unbounded (capacity ignored); recv() blocks; close by dropping senders";
    }
    return capacity == 0 ? "rendezvous; recv() blocks; close by dropping senders"
                         : "recv() blocks; close by dropping senders";
  }

  spindle_channel(std::size_t capacity, u64 /*total*/)
      : ends_(Bounded ? spindle::bounded<u64>(capacity) : spindle::unbounded<u64>()) {}

  using producer = spindle_producer<spindle::sender<u64>>;
  using consumer = spindle_consumer<spindle::receiver<u64>>;

  auto make_producer() -> producer { return producer(ends_->first); }
  auto make_consumer() -> consumer { return consumer(ends_->second); }
  /// Drops the harness's own handles: the channel closes when the last producer is done.
  void seal() { ends_.reset(); }

 private:
  std::optional<std::pair<spindle::sender<u64>, spindle::receiver<u64>>> ends_;
};

/// spindle's lanes channel (bounded_lanes): one lane per producer, each producer sending through
/// its own copy of the sender, so that it owns a lane (every copy takes the next lane, round
/// robin: the harness's own handle has lane 0, the producers' copies lanes 1 .. P-1 and then 0
/// again, which the harness's handle gives up at seal()). For a fair comparison the scenario's
/// capacity is split over the lanes: each holds capacity / producers (at least 1), so that the
/// channel buffers as many messages in all as the other rows' queues (fewer where the
/// capacity is not a multiple of the producers). Each lane is a FIFO, so each consumer sees
/// one producer's messages in order, and the harness checks it.
class spindle_lanes_channel {
 public:
  static constexpr std::string_view key = "spindle-lanes";
  static constexpr std::string_view name = "spindle lanes";
  static constexpr bool fifo = true;
  // With one producer it is one lane, a bounded ring behind a scan: the spsc and ping-pong
  // scenarios would only repeat the bounded row.
  static constexpr bool several_producers = true;

  static auto lane_capacity(std::size_t capacity, int producers) -> std::size_t {
    return std::max<std::size_t>(capacity / static_cast<std::size_t>(std::max(producers, 1)), 1);
  }

  static auto note(std::size_t capacity) -> std::string {
    return capacity == 0 ? "a lane of 1 per producer (no rendezvous); recv() blocks; close by "
                           "dropping senders"
                         : "a lane per producer, the capacity split over them (at least 1 "
                           "each); recv() blocks; close by dropping senders";
  }

  spindle_lanes_channel(std::size_t capacity, u64 /*total*/, int producers)
      : ends_(spindle::bounded_lanes<u64>(lane_capacity(capacity, producers),
                                          static_cast<std::size_t>(std::max(producers, 1)))) {}

  using producer = spindle_producer<spindle::sender<u64>>;
  using consumer = spindle_consumer<spindle::receiver<u64>>;

  /// A copy of the sender per producer: the copy takes the producer's lane.
  auto make_producer() -> producer { return producer(ends_->first); }
  auto make_consumer() -> consumer { return consumer(ends_->second); }
  /// Drops the harness's own handles: the channel closes when the last producer is done.
  void seal() { ends_.reset(); }

 private:
  std::optional<std::pair<spindle::sender<u64>, spindle::receiver<u64>>> ends_;
};

/// spindle's channel for one sender and one receiver (bounded_spsc): the same natural API as
/// spindle_channel, with the move-only handles handed to the one producer and the one consumer.
class spindle_spsc_channel {
 public:
  static constexpr std::string_view key = "spindle-spsc";
  static constexpr std::string_view name = "spindle spsc";
  static constexpr bool fifo = true;
  static constexpr bool single_producer_single_consumer = true;

  static auto note(std::size_t /*capacity*/) -> std::string {
    return "bounded_spsc; recv() blocks; close by dropping the sender";
  }

  spindle_spsc_channel(std::size_t capacity, u64 /*total*/)
      : ends_(spindle::bounded_spsc<u64>(capacity)) {}

  using producer = spindle_producer<spindle::spsc_sender<u64>>;
  using consumer = spindle_consumer<spindle::spsc_receiver<u64>>;

  /// Called once each: the handles move out.
  auto make_producer() -> producer { return producer(std::move(ends_->first)); }
  auto make_consumer() -> consumer { return consumer(std::move(ends_->second)); }
  void seal() { ends_.reset(); }

 private:
  std::optional<std::pair<spindle::spsc_sender<u64>, spindle::spsc_receiver<u64>>> ends_;
};

// ---------------------------------------------------------------------------------------------
// A bare single-producer single-consumer ring: the floor a channel with one sender and one
// receiver is measured against (issue 15 quotes a bare ring's figure as the SPSC target).
// Lamport's ring (Lamport, "Specifying concurrent program modules", TOPLAS 1983) with two
// monotonic indices on lines of their own, each side keeping a copy of the other's index and
// re-reading it only when the ring looks full (producer) or empty (consumer), as Rigtorp's
// SPSCQueue does. No close, no blocking: it spins with a pause, then yields, and stops by
// count. Only the spsc and pingpong scenarios (one producer, one consumer) list it.

/// Whether adapter `Q` serves one producer and one consumer only (it declares
/// `single_producer_single_consumer`): the scenarios with more threads leave it out.
template <class Q>
constexpr auto single_producer_single_consumer() -> bool {
  if constexpr (requires { Q::single_producer_single_consumer; }) {
    return Q::single_producer_single_consumer;
  }
  return false;
}

/// Whether adapter `Q` is listed only where some side has more than one thread (it declares
/// `several_producers`): the spsc and ping-pong scenarios leave it out.
template <class Q>
constexpr auto several_producers() -> bool {
  if constexpr (requires { Q::several_producers; }) {
    return Q::several_producers;
  }
  return false;
}

/// Makes adapter `Q` for a workload of `producers` producers: `Q(capacity, total, producers)`
/// where it has that constructor, else `Q(capacity, total)`.
template <class Q>
auto make_queue(std::size_t capacity, u64 total, int producers) -> std::unique_ptr<Q> {
  if constexpr (std::is_constructible_v<Q, std::size_t, u64, int>) {
    return std::make_unique<Q>(capacity, total, producers);
  } else {
    return std::make_unique<Q>(capacity, total);
  }
}

class bare_spsc_ring {
 public:
  static constexpr std::string_view key = "bare-spsc";
  static constexpr std::string_view name = "bare SPSC ring";
  static constexpr bool fifo = true;
  static constexpr bool single_producer_single_consumer = true;

  static auto note(std::size_t /*capacity*/) -> std::string {
    return "SPINNING (pause, then yield); one producer, one consumer; no close; stop by count";
  }

  bare_spsc_ring(std::size_t capacity, u64 total)
      : slots_(std::bit_ceil(std::max<std::size_t>(capacity, 1))),
        mask_(slots_.size() - 1),
        end_(total) {}

  void wait_push(u64 v) {
    // relaxed: only this producer writes tail_.
    u64 const t = tail_.load(std::memory_order_relaxed);
    spin_then_yield backoff;
    while (t - head_seen_ == slots_.size()) {
      // acquire: pairs with the consumer's release store of head_: its read of the slot we
      // are about to overwrite is done.
      head_seen_ = head_.load(std::memory_order_acquire);
      if (t - head_seen_ == slots_.size()) {
        backoff.wait();
      }
    }
    slots_[t & mask_] = v;
    // release: publishes the slot to the consumer's acquire load of tail_.
    tail_.store(t + 1, std::memory_order_release);
  }

  void wait_pop(u64& out) {
    // relaxed: only this consumer writes head_.
    u64 const h = head_.load(std::memory_order_relaxed);
    spin_then_yield backoff;
    while (h == tail_seen_) {
      // acquire: pairs with the producer's release store of tail_.
      tail_seen_ = tail_.load(std::memory_order_acquire);
      if (h == tail_seen_) {
        backoff.wait();
      }
    }
    out = slots_[h & mask_];
    // release: our read of the slot happens-before the producer reuses it.
    head_.store(h + 1, std::memory_order_release);
  }

  auto end() -> counted_end& { return end_; }
  auto make_producer() -> plain_producer<bare_spsc_ring> { return plain_producer(*this); }
  auto make_consumer() -> counted_consumer<bare_spsc_ring> { return counted_consumer(*this); }
  void seal() {}

 private:
  std::vector<u64> slots_;
  std::size_t mask_;
  alignas(128) std::atomic<u64> tail_{0};  // written by the producer
  u64 head_seen_ = 0;                      // the producer's copy of head_
  alignas(128) std::atomic<u64> head_{0};  // written by the consumer
  u64 tail_seen_ = 0;                      // the consumer's copy of tail_
  alignas(128) counted_end end_;
};

// ---------------------------------------------------------------------------------------------
// std::mutex + std::condition_variable + std::deque, bounded, with close.

class mutex_queue {
 public:
  static constexpr std::string_view key = "mutex";
  static constexpr std::string_view name = "std::mutex+condvar deque";
  static constexpr bool fifo = true;

  static auto note(std::size_t capacity) -> std::string {
    return std::string("blocking push/pop; close by last producer") +
           (capacity == 0 ? "; capacity 1 (no rendezvous)" : "");
  }

  mutex_queue(std::size_t capacity, u64 /*total*/)
      : capacity_(std::max<std::size_t>(capacity, 1)) {}

  class producer {
   public:
    explicit producer(mutex_queue& q) : q_(&q) {
      std::lock_guard lock(q_->mutex_);
      ++q_->producers_;
    }
    producer(producer&& other) noexcept : q_(std::exchange(other.q_, nullptr)) {}
    producer(producer const&) = delete;
    auto operator=(producer const&) -> producer& = delete;
    auto operator=(producer&&) -> producer& = delete;
    ~producer() {
      if (q_ != nullptr) {
        q_->producer_done();
      }
    }

    void push(u64 v) {
      std::unique_lock lock(q_->mutex_);
      q_->not_full_.wait(lock, [&] { return q_->items_.size() < q_->capacity_; });
      q_->items_.push_back(v);
      lock.unlock();
      q_->not_empty_.notify_one();
    }

   private:
    mutex_queue* q_;
  };

  class consumer {
   public:
    explicit consumer(mutex_queue& q) : q_(&q) {}
    auto pop(u64& out) -> bool {
      std::unique_lock lock(q_->mutex_);
      q_->not_empty_.wait(lock, [&] { return !q_->items_.empty() || q_->producers_ == 0; });
      if (q_->items_.empty()) {
        return false;
      }
      out = q_->items_.front();
      q_->items_.pop_front();
      lock.unlock();
      q_->not_full_.notify_one();
      return true;
    }

   private:
    mutex_queue* q_;
  };

  auto make_producer() -> producer { return producer(*this); }
  auto make_consumer() -> consumer { return consumer(*this); }
  void seal() {}

 private:
  void producer_done() {
    std::unique_lock lock(mutex_);
    if (--producers_ == 0) {
      lock.unlock();
      not_empty_.notify_all();
    }
  }

  std::size_t capacity_;
  std::mutex mutex_;
  std::condition_variable not_full_;
  std::condition_variable not_empty_;
  std::deque<u64> items_;
  int producers_ = 0;
};

// ---------------------------------------------------------------------------------------------
// moodycamel::BlockingConcurrentQueue: unbounded; wait_dequeue blocks on a semaphore.

#if defined(SPINDLE_HAVE_MOODYCAMEL)
class moodycamel_queue {
 public:
  static constexpr std::string_view key = "moodycamel";
  static constexpr std::string_view name = "moodycamel::BlockingConcurrentQueue";
  // Items of one producer come out in order, but the queue keeps one sub-queue per producer
  // and promises no more across consumers, so the harness checks counts and checksums only.
  static constexpr bool fifo = false;

  static auto note(std::size_t /*capacity*/) -> std::string {
    return "UNBOUNDED (capacity ignored); tokens; wait_dequeue blocks; stop by count";
  }

  moodycamel_queue(std::size_t /*capacity*/, u64 total) : end_(total) {}

  class producer {
   public:
    explicit producer(moodycamel_queue& q) : q_(&q), token_(q.queue_) {}
    void push(u64 v) {
      if (!q_->queue_.enqueue(token_, v)) {
        fail("moodycamel enqueue failed");
      }
    }

   private:
    moodycamel_queue* q_;
    moodycamel::ProducerToken token_;
  };

  class consumer {
   public:
    explicit consumer(moodycamel_queue& q) : q_(&q), token_(q.queue_) {}
    auto pop(u64& out) -> bool {
      if (left_ == 0) {
        left_ = q_->end_.claim();
        if (left_ == 0) {
          return false;
        }
      }
      q_->queue_.wait_dequeue(token_, out);
      --left_;
      return true;
    }

   private:
    moodycamel_queue* q_;
    moodycamel::ConsumerToken token_;
    u64 left_ = 0;
  };

  auto make_producer() -> producer { return producer(*this); }
  auto make_consumer() -> consumer { return consumer(*this); }
  void seal() {}

 private:
  moodycamel::BlockingConcurrentQueue<u64> queue_;
  counted_end end_;
};
#endif

// ---------------------------------------------------------------------------------------------
// boost::lockfree::queue: fixed capacity, no blocking; spin, then yield.

#if defined(SPINDLE_HAVE_BOOST_LOCKFREE)
class boost_queue {
 public:
  static constexpr std::string_view key = "boost";
  static constexpr std::string_view name = "boost::lockfree::queue";
  static constexpr bool fifo = true;

  // fixed_sized queues index their nodes with 16 bits; one node is the dummy head.
  static constexpr std::size_t max_capacity = 65534;

  static auto note(std::size_t capacity) -> std::string {
    std::string n = "no blocking: spin-then-yield push/pop; stop by count";
    if (capacity == 0) {
      n += "; capacity 1 (no rendezvous)";
    } else if (capacity > max_capacity) {
      n += "; capacity clamped to 65534";
    }
    return n;
  }

  boost_queue(std::size_t capacity, u64 total)
      : queue_(std::clamp<std::size_t>(capacity, 1, max_capacity) + 1), end_(total) {}

  void wait_push(u64 v) {
    spin_then_yield w;
    while (!queue_.bounded_push(v)) {
      w.wait();
    }
  }
  void wait_pop(u64& out) {
    spin_then_yield w;
    while (!queue_.pop(out)) {
      w.wait();
    }
  }
  auto end() -> counted_end& { return end_; }

  auto make_producer() -> plain_producer<boost_queue> { return plain_producer(*this); }
  auto make_consumer() -> counted_consumer<boost_queue> { return counted_consumer(*this); }
  void seal() {}

 private:
  boost::lockfree::queue<u64, boost::lockfree::fixed_sized<true>> queue_;
  counted_end end_;
};
#endif

// ---------------------------------------------------------------------------------------------
// atomic_queue::AtomicQueueB (MPMC, runtime capacity, atomic elements): its push() and pop()
// take a ticket and busy-wait on the slot.

#if defined(SPINDLE_HAVE_ATOMIC_QUEUE)
class atomic_queue_b {
 public:
  static constexpr std::string_view key = "atomic_queue";
  static constexpr std::string_view name = "atomic_queue::AtomicQueueB";
  // Slots carry no lap number: a producer one lap ahead can fill a slot before the producer
  // whose ticket it was, so a consumer may see one producer's messages out of order.
  static constexpr bool fifo = false;

  static auto note(std::size_t capacity) -> std::string {
    std::string n = "SPINNING push/pop (no blocking, no yield); stop by count";
    if (capacity < 64 || (capacity & (capacity - 1)) != 0) {
      n += "; capacity rounded up to a power of 2 >= 64";
    }
    return n;
  }

  atomic_queue_b(std::size_t capacity, u64 total)
      : queue_(static_cast<unsigned>(std::clamp<std::size_t>(capacity, 1, 1U << 30))),
        end_(total) {}

  void wait_push(u64 v) { queue_.push(v); }
  void wait_pop(u64& out) { out = queue_.pop(); }
  auto end() -> counted_end& { return end_; }

  auto make_producer() -> plain_producer<atomic_queue_b> { return plain_producer(*this); }
  auto make_consumer() -> counted_consumer<atomic_queue_b> { return counted_consumer(*this); }
  void seal() {}

 private:
  atomic_queue::AtomicQueueB<u64> queue_;
  counted_end end_;
};
#endif

// ---------------------------------------------------------------------------------------------
// oneTBB concurrent_bounded_queue: blocking push when full and pop when empty.

#if defined(SPINDLE_HAVE_TBB)
class tbb_queue {
 public:
  static constexpr std::string_view key = "tbb";
  static constexpr std::string_view name = "tbb::concurrent_bounded_queue";
  static constexpr bool fifo = true;

  static auto note(std::size_t capacity) -> std::string {
    return std::string("blocking push/pop; stop by count") +
           (capacity == 0 ? "; capacity 1 (no rendezvous)" : "");
  }

  tbb_queue(std::size_t capacity, u64 total) : end_(total) {
    queue_.set_capacity(static_cast<std::ptrdiff_t>(std::max<std::size_t>(capacity, 1)));
  }

  void wait_push(u64 v) { queue_.push(v); }
  void wait_pop(u64& out) { queue_.pop(out); }
  auto end() -> counted_end& { return end_; }

  auto make_producer() -> plain_producer<tbb_queue> { return plain_producer(*this); }
  auto make_consumer() -> counted_consumer<tbb_queue> { return counted_consumer(*this); }
  void seal() {}

 private:
  tbb::concurrent_bounded_queue<u64> queue_;
  counted_end end_;
};
#endif

// ---------------------------------------------------------------------------------------------
// xenium::vyukov_bounded_queue (Vyukov's bounded MPMC array queue): try_push/try_pop only, so
// both sides spin, then yield. Its size must be a power of two of at least 2.

#if defined(SPINDLE_HAVE_XENIUM)
class xenium_vyukov_queue {
 public:
  static constexpr std::string_view key = "xenium";
  static constexpr std::string_view name = "xenium::vyukov_bounded_queue";
  // Positions are taken from one enqueue and one dequeue counter in order: a producer's later
  // message gets a later position, and a consumer's later pop a later one.
  static constexpr bool fifo = true;

  static auto slots(std::size_t capacity) -> std::size_t {
    return std::bit_ceil(std::clamp<std::size_t>(capacity, 2, std::size_t{1} << 30));
  }

  static auto note(std::size_t capacity) -> std::string {
    std::string n = "no blocking: spin-then-yield try_push/try_pop; stop by count";
    if (capacity == 0) {
      n += "; capacity 2 (no rendezvous)";
    } else if (slots(capacity) != capacity) {
      n += "; capacity rounded up to a power of 2 >= 2";
    }
    return n;
  }

  xenium_vyukov_queue(std::size_t capacity, u64 total) : queue_(slots(capacity)), end_(total) {}

  void wait_push(u64 v) {
    spin_then_yield w;
    while (!queue_.try_push(v)) {
      w.wait();
    }
  }
  void wait_pop(u64& out) {
    spin_then_yield w;
    while (!queue_.try_pop(out)) {
      w.wait();
    }
  }
  auto end() -> counted_end& { return end_; }

  auto make_producer() -> plain_producer<xenium_vyukov_queue> { return plain_producer(*this); }
  auto make_consumer() -> counted_consumer<xenium_vyukov_queue> { return counted_consumer(*this); }
  void seal() {}

 private:
  xenium::vyukov_bounded_queue<u64> queue_;
  counted_end end_;
};
#endif

// ---- What every channel scenario shares: the message encoding and the exactly-once check ----

/// A message: the producer's index in the high half, its sequence number (from 1) in the low.
inline auto encode(u64 producer, u64 seq) -> u64 {
  return (producer << 32) | seq;
}

/// What one consumer saw, per producer.
struct tally {
  explicit tally(int producers)
      : last(static_cast<std::size_t>(producers), 0),
        count(static_cast<std::size_t>(producers), 0),
        sum(static_cast<std::size_t>(producers), 0),
        bits(static_cast<std::size_t>(producers), 0) {}

  void see(u64 v, bool check_order) {
    auto const p = static_cast<std::size_t>(v >> 32);
    auto const seq = v & 0xffff'ffffULL;
    if (p >= count.size() || seq == 0) {
      bad = true;
      return;
    }
    if (check_order && seq <= last[p]) {
      out_of_order = true;
    }
    last[p] = seq;
    ++count[p];
    sum[p] += seq;
    bits[p] ^= seq;
  }

  std::vector<u64> last;
  std::vector<u64> count;
  std::vector<u64> sum;
  std::vector<u64> bits;
  bool bad = false;
  bool out_of_order = false;
};

/// Fails the run unless every producer's `per_producer` messages reached the consumers
/// exactly once (count, sum and xor of the sequence numbers), no message was invented, and a
/// FIFO implementation kept each producer's order.
inline void verify(std::string_view impl, int producers, u64 per_producer,
                   std::vector<tally> const& tallies) {
  auto const n = per_producer;
  u64 expected_xor = 0;
  for (u64 s = 1; s <= n; ++s) {
    expected_xor ^= s;
  }
  for (auto const& t : tallies) {
    if (t.bad) {
      fail(std::string(impl) + ": received a message no producer sent");
    }
    if (t.out_of_order) {
      fail(std::string(impl) + ": a consumer saw one producer's messages out of order");
    }
  }
  for (std::size_t p = 0; p < static_cast<std::size_t>(producers); ++p) {
    u64 count = 0;
    u64 sum = 0;
    u64 bits = 0;
    for (auto const& t : tallies) {
      count += t.count[p];
      sum += t.sum[p];
      bits ^= t.bits[p];
    }
    if (count != n || sum != n * (n + 1) / 2 || bits != expected_xor) {
      std::ostringstream os;
      os << impl << ": producer " << p << " sent " << n << " messages, consumers received " << count
         << " (sum " << sum << ", expected " << n * (n + 1) / 2 << ")";
      fail(os.str());
    }
  }
}

/// CPU time of the calling thread.
inline auto thread_cpu_now() -> std::chrono::nanoseconds {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

/// Calls `visit.template operator()<Q>()` for every channel implementation built in, in the
/// order of the tables: spindle's bounded, lanes, unbounded and spsc channels, the mutex
/// baseline, then each peer found at configure time. Every scenario lists its implementations
/// through this one function.
template <class Visit>
void for_each_channel_impl(Visit&& visit) {
  visit.template operator()<spindle_channel<true>>();
  visit.template operator()<spindle_lanes_channel>();
  visit.template operator()<spindle_channel<false>>();
  visit.template operator()<spindle_spsc_channel>();
  visit.template operator()<mutex_queue>();
  visit.template operator()<bare_spsc_ring>();
#if defined(SPINDLE_HAVE_MOODYCAMEL)
  visit.template operator()<moodycamel_queue>();
#endif
#if defined(SPINDLE_HAVE_BOOST_LOCKFREE)
  visit.template operator()<boost_queue>();
#endif
#if defined(SPINDLE_HAVE_ATOMIC_QUEUE)
  visit.template operator()<atomic_queue_b>();
#endif
#if defined(SPINDLE_HAVE_TBB)
  visit.template operator()<tbb_queue>();
#endif
#if defined(SPINDLE_HAVE_XENIUM)
  visit.template operator()<xenium_vyukov_queue>();
#endif
}

/// --only a,b: keeps the implementations of `all` whose `key` is listed, in table order (list
/// spindle too to get the ratios; a run of one implementation alone is for profiling it).
/// Throws std::invalid_argument naming the keys built when a listed key is unknown.
template <class Impl>
auto keep_only(std::vector<Impl> all, std::string const& only) -> std::vector<Impl> {
  if (only.empty()) {
    return all;
  }
  std::vector<std::string> keys;
  std::stringstream ss(only);
  for (std::string k; std::getline(ss, k, ',');) {
    keys.push_back(k);
  }
  for (auto const& k : keys) {
    if (std::none_of(all.begin(), all.end(), [&](Impl const& i) { return i.key == k; })) {
      std::string known;
      for (auto const& i : all) {
        known += " " + i.key;
      }
      throw std::invalid_argument("--only: no implementation '" + k + "' (built:" + known + ")");
    }
  }
  std::vector<Impl> kept;
  for (auto& i : all) {
    if (std::find(keys.begin(), keys.end(), i.key) != keys.end()) {
      kept.push_back(std::move(i));
    }
  }
  return kept;
}

}  // namespace spindle_bench::channel
