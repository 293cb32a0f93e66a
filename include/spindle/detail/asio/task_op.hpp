// SPDX-License-Identifier: BSL-1.0
#pragma once
// What `co_await op(..., spindle::use_task)` awaits (spindle/asio.hpp): an Asio asynchronous
// operation, started when the coroutine suspends and finished by resuming it on its target.
//
// Asio calls an asynchronous operation's initiating function with a completion token; for
// spindle::use_task, asio::async_result (specialised in spindle/asio.hpp) returns a `task_op`,
// which keeps the operation's initiation and arguments and starts nothing yet. `co_await` on it
// suspends the coroutine and calls the initiation with a `task_op_handler`, the completion
// handler Asio stores with the operation. When the operation completes, Asio invokes the
// handler, on a thread of the I/O object's executor (an io_context thread): it stores the
// arguments in the awaiter and hands the coroutine to its resume target
// (detail/coro/resume.hpp), so the coroutine continues on a worker of its spindle executor
// (or in its sync_wait loop), never on the io_context's thread. The handler has no associated
// executor of its own, so the completion costs Asio no extra hop: the I/O thread only queues
// the coroutine.
//
// Cancellation: with `spindle::use_task(stop)`, the handler carries an Asio cancellation slot
// (Asio's per-operation cancellation, associated_cancellation_slot), and a stop request emits
// `asio::cancellation_type::terminal` on it. Asio's cancellation signals are not thread safe:
// the operation installs and runs its cancellation handler on its own executor, so the emission
// is posted there (the initiation's get_executor(), which Asio's I/O objects provide); for an
// initiation without one, it is emitted on the requesting thread.
//
// Who continues the coroutine: up to three parties are involved, and the last one to arrive
// continues it (the pattern of the stoppable sleep, detail/coro/select_awaiter.hpp's arrivals):
// await_suspend's set-up, the handler (invoked, or destroyed without being invoked, which Asio
// does to the operations of an execution context destroyed with them pending), and a posted
// emission while one is in flight. `parties_` counts those still to arrive. A stop callback adds
// itself only while the count is not zero (once it is, the coroutine is being continued and the
// callback must do nothing); the callback's destructor, run when the awaiter dies, waits for a
// callback that is running. The set-up is last when the operation completed before
// await_suspend finished: it then continues the coroutine by not suspending.
//
// Synchronization:
//   parties_  parties still to arrive; acq_rel on every decrement (the last one sees what the
//             others stored: the handler's arguments), relaxed on the stop callback's increment
//             (its party is released by its own decrement).
//   result_   written by the handler before its decrement, read by the coroutine after the last.

#include <spindle/detail/coro/resume.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>

#include <asio/associated_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/cancellation_type.hpp>
#include <asio/error.hpp>
#include <asio/error_code.hpp>
#include <asio/post.hpp>

#include <coroutine>
#include <cstddef>
#include <exception>
#include <optional>
#include <stop_token>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// What `co_await` returns for the values `Ts` of a completion (after a leading error, if any):
/// nothing, the one value, or a tuple.
template <class Tuple, std::size_t First, std::size_t... I>
auto completion_values(Tuple& t, std::index_sequence<I...> /*unused*/) {
  if constexpr (sizeof...(I) == 0) {
    static_cast<void>(t);
  } else if constexpr (sizeof...(I) == 1) {
    return std::move(std::get<First + I>(t)...);
  } else {
    return std::tuple<std::tuple_element_t<First + I, Tuple>...>(
        std::move(std::get<First + I>(t))...);
  }
}

/// Turns the arguments of a completion into the result of `co_await`: a leading
/// asio::error_code that is set is thrown as std::system_error, a leading std::exception_ptr
/// that is set is rethrown, and the remaining values are returned.
template <class Tuple>
auto unpack_completion(Tuple& t) {
  constexpr std::size_t n = std::tuple_size_v<Tuple>;
  if constexpr (n > 0 && std::is_same_v<std::tuple_element_t<0, Tuple>, ::asio::error_code>) {
    if (std::get<0>(t)) {
      throw std::system_error(std::get<0>(t));
    }
    return completion_values<Tuple, 1>(t, std::make_index_sequence<n - 1>{});
  } else if constexpr (n > 0 &&
                       std::is_same_v<std::tuple_element_t<0, Tuple>, std::exception_ptr>) {
    if (std::get<0>(t)) {
      std::rethrow_exception(std::get<0>(t));
    }
    return completion_values<Tuple, 1>(t, std::make_index_sequence<n - 1>{});
  } else {
    return completion_values<Tuple, 0>(t, std::make_index_sequence<n>{});
  }
}

/// The I/O executor of an initiation, where cancellation is emitted (see the file comment).
template <class Initiation>
concept has_io_executor = requires(Initiation const& i) { i.get_executor(); };

template <class Initiation>
struct io_executor_of {
  using type = std::nullptr_t;
};
template <has_io_executor Initiation>
struct io_executor_of<Initiation> {
  using type = std::decay_t<decltype(std::declval<Initiation const&>().get_executor())>;
};

template <class Initiation, class InitArgs, class... Args>
class task_op;

/// The completion handler that Asio stores with the operation (see the file comment). Invoked
/// once, or destroyed without being invoked; either is its party's arrival.
template <class Op, class... Args>
class task_op_handler {
 public:
  using cancellation_slot_type = ::asio::cancellation_slot;

  explicit task_op_handler(Op* op) noexcept : op_(op) {}
  task_op_handler(task_op_handler&& other) noexcept : op_(std::exchange(other.op_, nullptr)) {}
  task_op_handler(task_op_handler const&) = delete;
  auto operator=(task_op_handler const&) -> task_op_handler& = delete;
  auto operator=(task_op_handler&&) -> task_op_handler& = delete;

  /// Destroyed without being invoked: the coroutine continues with operation_aborted.
  ~task_op_handler() {
    if (op_ != nullptr) {
      op_->arrive();
    }
  }

  void operator()(Args... args) {
    Op* const op = std::exchange(op_, nullptr);
    op->complete(std::forward<Args>(args)...);
  }

  /// The slot a stop request emits on (spindle::use_task(stop)); unconnected otherwise.
  [[nodiscard]] auto get_cancellation_slot() const noexcept -> cancellation_slot_type {
    return op_ != nullptr ? op_->slot() : cancellation_slot_type();
  }

 private:
  Op* op_;
};

/// The awaitable of `co_await op(..., spindle::use_task)`. See the file comment.
template <class Initiation, class InitArgs, class... Args>
class task_op {
  using result_tuple = std::tuple<std::decay_t<Args>...>;
  using handler_type = task_op_handler<task_op, Args...>;
  friend handler_type;

 public:
  task_op(Initiation init, InitArgs args, std::stop_token stop)
      : init_(std::move(init)), args_(std::move(args)), stop_(std::move(stop)) {}
  task_op(task_op const&) = delete;
  auto operator=(task_op const&) -> task_op& = delete;
  // Returned by value before it is awaited; nothing is registered anywhere yet.
  task_op(task_op&& other) noexcept(std::is_nothrow_move_constructible_v<Initiation>&&
                                        std::is_nothrow_move_constructible_v<InitArgs>)
      : init_(std::move(other.init_)),
        args_(std::move(other.args_)),
        stop_(std::move(other.stop_)) {}
  ~task_op() = default;

  /// Ready, without starting the operation, when stop was requested already.
  [[nodiscard]] auto await_ready() const noexcept -> bool { return stop_.stop_requested(); }

  /// Starts the operation. Returns false when it completed before this returned.
  ///
  /// Throws: whatever the initiation throws (the operation did not start; Asio's initiations
  /// destroy the handler then, which this awaiter tolerates).
  template <class Promise>
  auto await_suspend(std::coroutine_handle<Promise> h) -> bool {
    where_ = target_of(h);
    node_.handle = h;
    // relaxed: nothing is shared yet; the initiation below publishes the handler (and with it
    // this awaiter) to the operation's threads.
    parties_.store(2, std::memory_order_relaxed);
    bool const cancellable = stop_.stop_possible();
    if (cancellable) {
      signal_.emplace();
      if constexpr (has_io_executor<Initiation>) {
        io_executor_.emplace(init_.get_executor());
      }
    }
    std::apply([this](auto&... a) { std::move(init_)(handler_type(this), std::move(a)...); },
               args_);
    if (cancellable) {
      // May run on_stop at once (stop requested meanwhile).
      callback_.emplace(stop_, on_stop{this});
    }
    // The set-up's arrival: last when the operation already completed.
    return !arrive_last();
  }

  /// The operation's result (see unpack_completion).
  ///
  /// Throws: std::system_error with asio::error::operation_aborted when stop was requested
  /// before the operation started, or when the operation was destroyed without completing (its
  /// execution context was destroyed with it pending); what unpack_completion throws.
  auto await_resume() {
    callback_.reset();
    if (!result_) {
      throw std::system_error(::asio::error::make_error_code(::asio::error::operation_aborted),
                              stop_.stop_requested()
                                  ? "spindle::use_task: stop was requested"
                                  : "spindle::use_task: the operation was destroyed before it "
                                    "completed");
    }
    return unpack_completion(*result_);
  }

 private:
  struct on_stop {
    task_op* self;
    void operator()() const noexcept { self->cancel(); }
  };

  [[nodiscard]] auto slot() noexcept -> ::asio::cancellation_slot {
    return signal_ ? signal_->slot() : ::asio::cancellation_slot();
  }

  template <class... Vs>
  void complete(Vs&&... vs) {
    result_.emplace(std::forward<Vs>(vs)...);
    arrive();
  }

  /// A party's arrival: the last one continues the coroutine on its target.
  void arrive() noexcept {
    if (arrive_last()) {
      // SAFETY: every party has arrived, so the coroutine is suspended (the set-up returned
      // true) and nothing else touches this awaiter; this party alone continues it, once.
      resume_on(where_, node_);
    }
  }

  auto arrive_last() noexcept -> bool {
    // acq_rel: each party releases its work (the handler's result, the emission); the last
    // acquires all of it before the coroutine continues.
    return parties_.fetch_sub(1, std::memory_order_acq_rel) == 1;
  }

  /// The stop callback: emits terminal cancellation on the operation's executor.
  void cancel() noexcept {
    // relaxed: a first guess for the CAS.
    std::size_t n = parties_.load(std::memory_order_relaxed);
    do {
      if (n == 0) {
        // The coroutine is being continued; it waits for this callback before the awaiter dies.
        return;
      }
      // relaxed: this party touches only the signal and the executor, which await_suspend set
      // before it registered the callback (std::stop_callback orders the registration before
      // the call); its own decrement releases what it did.
    } while (!parties_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed,
                                             std::memory_order_relaxed));
    if constexpr (has_io_executor<Initiation>) {
      try {
        ::asio::post(*io_executor_, [this] {
          signal_->emit(::asio::cancellation_type::terminal);
          arrive();
        });
        return;
      } catch (...) {
        // Nothing could be queued (std::bad_alloc): the operation runs to its end uncancelled.
        arrive();
        return;
      }
    } else {
      signal_->emit(::asio::cancellation_type::terminal);
      arrive();
    }
  }

  Initiation init_;
  InitArgs args_;
  std::stop_token stop_;
  resume_target* where_ = nullptr;
  resume_node node_;
  // INVARIANT: holds the completion's arguments exactly when the handler was invoked.
  std::optional<result_tuple> result_;
  std::optional<::asio::cancellation_signal> signal_;
  std::optional<typename io_executor_of<Initiation>::type> io_executor_;
  atomic<std::size_t> parties_{0};
  std::optional<std::stop_callback<on_stop>> callback_;
};

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
