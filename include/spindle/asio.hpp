// SPDX-License-Identifier: BSL-1.0
#pragma once
// spindle with Asio (standalone Asio, the `asio` namespace; 1.22 or later): I/O on Asio,
// coroutines, channels and CPU work on spindle, with no glue between them. Optional: this is
// the only spindle header that includes Asio, and nothing else in spindle includes it.
//
// Three bridges:
//
//   spindle::asio_executor ax(ex);                      // spindle::executor& ex
//   asio::post(ax, f);                                  // f runs on a worker of ex
//   asio::co_spawn(ax, handle(std::move(sock)), asio::detached);  // an asio::awaitable on ex
//   sock.async_read_some(buf, asio::bind_executor(ax, h));        // h runs on ex
//
// 1. `asio_executor` is a handle to a spindle::executor that meets Asio's executor
//    requirements (the standard executor model of asio::execution: execute, the blocking,
//    outstanding_work, relationship, mapping, allocator and context properties), so every
//    Asio algorithm that takes an executor accepts it, and it converts to
//    asio::any_io_executor. execute(f) is the executor's post(f). Possibly-blocking (the
//    default, as io_context's executor) runs f at once when called on one of the executor's
//    workers (asio::dispatch); `blocking.never` always queues it (asio::post, asio::defer).
//    Tracked outstanding work (what Asio holds while an operation may still complete on the
//    executor, and what asio::co_spawn holds for the coroutine it runs) keeps the executor's
//    shutdown waiting, as a suspended spindle coroutine does (detail/asio/work.hpp).
//    Its execution context (the `context` property, where Asio keeps the services of I/O
//    objects made from this executor, a timer made from `co_await asio::this_coro::executor`
//    say) is one shared by the process's spindle executors, or one the caller names.
//
//   spindle::task<std::size_t> echo_once(asio::ip::tcp::socket& s) {
//     std::array<char, 1024> buf;
//     std::size_t n = co_await s.async_read_some(asio::buffer(buf), spindle::use_task);
//     co_return co_await asio::async_write(s, asio::buffer(buf, n), spindle::use_task);
//   }
//
// 2. `use_task` is a completion token: a spindle::task<T> co_awaits any Asio asynchronous
//    operation with it (detail/asio/task_op.hpp). The operation starts when the coroutine
//    suspends; when it completes on the I/O object's thread, the coroutine is handed back to
//    its own target and continues on a worker of its spindle executor, never on the
//    io_context's thread. `co_await` returns the completion's values (none, one, or a tuple)
//    after a leading error: an asio::error_code that is set is thrown as std::system_error,
//    an exception_ptr rethrown; `asio::experimental::as_tuple(spindle::use_task)` returns them
//    as values instead, in a tuple. (Asio 1.22's redirect_error needs a token whose awaitable
//    type does not depend on the operation, which use_task's does: use as_tuple.)
//    `use_task(stop)` takes a std::stop_token: a stop request reaches the operation as Asio's
//    terminal per-operation cancellation (the operation completes with operation_aborted), and
//    a stop requested before the co_await starts nothing and throws operation_aborted.
//
//   asio::awaitable<void> consume(spindle::receiver<job> rx) {
//     for (;;) {
//       auto r = co_await spindle::async_recv(rx, asio::use_awaitable);
//       if (!r) co_return;                          // closed and drained
//       co_await handle(std::move(*r.value));
//     }
//   }
//
// 3. `async_recv(rx, token)`, `async_send(tx, value, token)` and `async_select(token, cases...)`
//    are spindle's channel operations and select as Asio asynchronous operations, for any
//    completion token (asio::use_awaitable, a callback, asio::use_future, asio::deferred...;
//    detail/asio/bridge.hpp). While the channel is not ready the operation waits in its wait
//    list, holding no thread; it completes on the completion handler's associated executor
//    (for an asio::awaitable, the awaitable's executor: the coroutine resumes there). The
//    completion signatures are `void(std::exception_ptr, recv_result<T>)`,
//    `void(std::exception_ptr, send_result<T>)` and `void(std::exception_ptr, std::size_t)`
//    (the chosen case, whose handler has run on that executor); the exception is one the
//    operation threw (std::bad_alloc). Asio's per-operation cancellation (a cancellation slot
//    bound to the handler, or the awaitable operators) ends a recv or send with status
//    `cancelled` (a send's value handed back), and a select with a std::system_error
//    (operation_aborted) in the exception_ptr, no case chosen.
//
// Thread safety: an asio_executor is a value; copies may be used from any thread. The
// operations are started from any thread.
//
// Lifetime and shutdown:
//   - the spindle::executor outlives every asio_executor made from it, as an io_context
//     outlives its executors. After its shutdown began, execute() on an untracked handle from a
//     thread that is not one of its workers throws std::logic_error, as post() does, and so
//     does tracking new work there; a tracked handle still submits (its work keeps the
//     executor running), which is how the completion of an operation started before the
//     shutdown still reaches its handler;
//   - a spindle coroutine suspended on an Asio operation keeps its executor's shutdown waiting
//     until the operation completes: close or cancel the I/O objects (use_task(stop), or
//     socket.close() from the I/O object's executor) before shutting the executor down, and let
//     those coroutines finish before the io_context is destroyed. An operation destroyed with
//     its io_context while pending resumes its coroutine with operation_aborted, but the
//     coroutine's I/O objects are then already unusable (Asio's rule: I/O objects die before
//     their execution context);
//   - a channel operation run for Asio holds tracked work on the handler's executor until it
//     completes: close the channel or cancel the operation before that executor's context
//     stops for good.
//
// Happens-before: whatever a thread did before execute(f) is visible to f; whatever an Asio
// operation's completion saw is visible to the coroutine that use_task resumes; a channel's
// own contract (channel.hpp) holds for its Asio operations.
//
// Memory: execute() allocates one task record (executor::post); use_task allocates nothing
// beyond what the operation allocates (the awaiter lives in the coroutine frame); a channel
// operation for Asio allocates its bridge's frame, and tracked work on a spindle executor one
// small record per tracking (shared by the handle's copies).
//
// Compilers (g++ 12 and clang 14 are tested): Asio 1.22 turns asio::awaitable on for clang only
// where __cpp_coroutines is defined, which clang 14 in C++20 mode does not define: build with
// -DASIO_HAS_CO_AWAIT=1 (spindle/asio.hpp itself needs no awaitable). g++ 12 miscompiles
// some temporaries in a co_await operand (a conditional expression's; an aggregate built in
// the call): name the value in a local first, as examples/asio_pipeline_server.cpp does.
//
// When not to use it: for a program whose whole work is I/O with little computation, plain
// Asio on an io_context per core is faster (docs/performance.md, "An echo server through
// Asio"); the hop from the I/O thread to a worker pays off when the work between reads is CPU
// work.
//
// Examples: examples/asio_echo_server.cpp, examples/asio_pipeline_server.cpp,
// tests/asio/asio_test.cpp (Example).

#include <spindle/async.hpp>
#include <spindle/channel.hpp>
#include <spindle/detail/asio/bridge.hpp>
#include <spindle/detail/asio/task_op.hpp>
#include <spindle/detail/asio/work.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/executor.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <asio/async_result.hpp>
#include <asio/execution.hpp>
#include <asio/execution_context.hpp>

#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <stop_token>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

namespace detail {
/// The execution context of asio_executors made without one: one per process, created on first
/// use. Asio's services that I/O objects made from such an executor need live in it until exit.
inline auto shared_asio_context() -> ::asio::execution_context& {
  static ::asio::execution_context context;
  return context;
}
}  // namespace detail

/// A handle to a spindle::executor that is an Asio executor (see the file comment).
/// `Never`: the blocking.never property (else blocking.possibly); `Tracked`: the
/// outstanding_work.tracked property (else untracked). Use the alias asio_executor and get the
/// other forms with asio::require / asio::prefer.
template <bool Never, bool Tracked>
class basic_asio_executor {
 public:
  /// An untracked, possibly-blocking handle to `ex`, whose Asio execution context is the one
  /// shared by the process's spindle executors.
  explicit basic_asio_executor(executor& ex) noexcept
  requires(!Tracked)
      : ex_(&ex), context_(&detail::shared_asio_context()) {}

  /// As above, with `context` as the executor's Asio execution context (an io_context, say, so
  /// that the I/O objects made from this executor use its reactor). Preconditions: `context`
  /// outlives every use of this handle and its copies.
  basic_asio_executor(executor& ex, ::asio::execution_context& context) noexcept
  requires(!Tracked)
      : ex_(&ex), context_(&context) {}

  basic_asio_executor(basic_asio_executor const& other) noexcept
      : ex_(other.ex_), context_(other.context_), work_(other.work_) {
    if constexpr (Tracked) {
      work_->acquire();
    }
  }
  basic_asio_executor(basic_asio_executor&& other) noexcept
      : ex_(other.ex_), context_(other.context_), work_(std::exchange(other.work_, nullptr)) {}
  auto operator=(basic_asio_executor const& other) noexcept -> basic_asio_executor& {
    if (this != &other) {
      *this = basic_asio_executor(other);
    }
    return *this;
  }
  auto operator=(basic_asio_executor&& other) noexcept -> basic_asio_executor& {
    if (this != &other) {
      drop();
      ex_ = other.ex_;
      context_ = other.context_;
      work_ = std::exchange(other.work_, nullptr);
    }
    return *this;
  }
  ~basic_asio_executor() { drop(); }

  /// The spindle executor this handle submits to.
  [[nodiscard]] auto spindle_executor() const noexcept -> executor& { return *ex_; }

  /// Whether the calling thread is one of the executor's workers.
  [[nodiscard]] auto running_in_this_thread() const noexcept -> bool {
    return ex_->is_worker_thread();
  }

  /// Runs `f` on a worker (executor::post). Possibly-blocking, on one of the executor's
  /// workers: runs `f` here, before returning. An exception escaping a queued `f` goes to the
  /// executor's unhandled-exception handler; one escaping an `f` run here propagates.
  ///
  /// A tracked handle is accepted also after the executor's shutdown began, from any thread:
  /// its work keeps the executor running (this is how an Asio operation's completion reaches
  /// a shutting-down executor), so `f` is queued as an accepted task, as a coroutine's
  /// resumption is.
  ///
  /// Throws: std::logic_error after the executor's shutdown began, for an untracked handle,
  /// from a thread that is not one of its workers (f is not run); std::bad_alloc.
  template <class F>
  void execute(F&& f) const {
    if constexpr (!Never) {
      if (ex_->is_worker_thread()) {
        std::decay_t<F> local(std::forward<F>(f));
        local();
        return;
      }
    }
    if constexpr (Tracked) {
      auto& core = detail::core_of(*ex_);
      using node = detail::posted_task<std::decay_t<F>>;
      node* const t = detail::new_node<node>(std::decay_t<F>(std::forward<F>(f)),
                                             &detail::executor_core::report_thunk, &core);
      // The executor cannot terminate before this handle's work is released, which comes
      // after this call: the queueing and its wake-up find it running.
      core.push_resumed(t);
    } else {
      ex_->post(std::forward<F>(f));
    }
  }

  friend auto operator==(basic_asio_executor const& a, basic_asio_executor const& b) noexcept
      -> bool {
    return a.ex_ == b.ex_ && a.context_ == b.context_;
  }
  friend auto operator!=(basic_asio_executor const& a, basic_asio_executor const& b) noexcept
      -> bool {
    return !(a == b);
  }

  // Properties (asio::query, asio::require, asio::prefer).
  [[nodiscard]] auto query(::asio::execution::context_t /*unused*/) const noexcept
      -> ::asio::execution_context& {
    return *context_;
  }
  [[nodiscard]] static constexpr auto query(::asio::execution::blocking_t /*unused*/) noexcept
      -> ::asio::execution::blocking_t {
    if constexpr (Never) {
      return ::asio::execution::blocking.never;
    } else {
      return ::asio::execution::blocking.possibly;
    }
  }
  [[nodiscard]] static constexpr auto query(
      ::asio::execution::outstanding_work_t /*unused*/) noexcept
      -> ::asio::execution::outstanding_work_t {
    if constexpr (Tracked) {
      return ::asio::execution::outstanding_work.tracked;
    } else {
      return ::asio::execution::outstanding_work.untracked;
    }
  }
  [[nodiscard]] static constexpr auto query(::asio::execution::relationship_t /*unused*/) noexcept
      -> ::asio::execution::relationship_t {
    return ::asio::execution::relationship.fork;
  }
  [[nodiscard]] static constexpr auto query(::asio::execution::mapping_t /*unused*/) noexcept
      -> ::asio::execution::mapping_t {
    return ::asio::execution::mapping.thread;
  }
  template <class OtherAllocator>
  [[nodiscard]] constexpr auto query(::asio::execution::allocator_t<OtherAllocator> /*unused*/)
      const noexcept -> std::allocator<void> {
    return {};
  }

  [[nodiscard]] auto require(::asio::execution::blocking_t::never_t /*unused*/) const noexcept
      -> basic_asio_executor<true, Tracked> {
    return rebind<true, Tracked>();
  }
  [[nodiscard]] auto require(::asio::execution::blocking_t::possibly_t /*unused*/) const noexcept
      -> basic_asio_executor<false, Tracked> {
    return rebind<false, Tracked>();
  }
  /// Throws: std::logic_error when not called from a worker after the executor's shutdown
  /// began (detail::work_token::make); std::bad_alloc.
  [[nodiscard]] auto require(::asio::execution::outstanding_work_t::tracked_t /*unused*/) const
      -> basic_asio_executor<Never, true> {
    if constexpr (Tracked) {
      return *this;
    } else {
      return basic_asio_executor<Never, true>(ex_, context_,
                                              detail::work_token::make(detail::core_of(*ex_)));
    }
  }
  [[nodiscard]] auto require(::asio::execution::outstanding_work_t::untracked_t /*unused*/)
      const noexcept -> basic_asio_executor<Never, false> {
    return rebind<Never, false>();
  }
  /// Relationship and allocator are accepted and change nothing: every submission is a fork,
  /// allocated by the executor's own pool.
  [[nodiscard]] auto require(::asio::execution::relationship_t::fork_t /*unused*/) const noexcept
      -> basic_asio_executor {
    return *this;
  }
  [[nodiscard]] auto require(::asio::execution::relationship_t::continuation_t /*unused*/)
      const noexcept -> basic_asio_executor {
    return *this;
  }
  template <class OtherAllocator>
  [[nodiscard]] auto require(::asio::execution::allocator_t<OtherAllocator> /*unused*/)
      const noexcept -> basic_asio_executor {
    return *this;
  }

 private:
  template <bool, bool>
  friend class basic_asio_executor;

  basic_asio_executor(executor* ex, ::asio::execution_context* context,
                      detail::work_token* work) noexcept
      : ex_(ex), context_(context), work_(work) {}

  /// This handle with other properties; a tracked result shares this handle's token.
  template <bool N, bool T>
  auto rebind() const noexcept -> basic_asio_executor<N, T> {
    static_assert(!T || Tracked, "tracking is added by require(outstanding_work.tracked)");
    if constexpr (T) {
      work_->acquire();
      return basic_asio_executor<N, T>(ex_, context_, work_);
    } else {
      return basic_asio_executor<N, T>(ex_, context_, nullptr);
    }
  }

  void drop() noexcept {
    if constexpr (Tracked) {
      if (work_ != nullptr) {
        std::exchange(work_, nullptr)->release();
      }
    }
  }

  executor* ex_;
  ::asio::execution_context* context_;
  // INVARIANT: a tracked handle that was not moved from holds one reference to its token; an
  // untracked one holds none (null).
  detail::work_token* work_ = nullptr;
};

/// The Asio executor of a spindle::executor: possibly-blocking, untracked (as io_context's).
using asio_executor = basic_asio_executor<false, false>;

/// The completion token that makes an Asio operation awaitable from a spindle::task (see the
/// file comment). `use_task(stop)` adds cancellation by a std::stop_token.
struct use_task_t;

/// use_task with a stop token: what `spindle::use_task(stop)` returns.
struct use_task_with_stop_t {
  std::stop_token stop;
};

struct use_task_t {
  /// The token with cancellation: a stop request on `stop` cancels the operation.
  auto operator()(std::stop_token stop) const noexcept -> use_task_with_stop_t {
    return use_task_with_stop_t{std::move(stop)};
  }
};

/// `co_await op(args..., spindle::use_task)` in a spindle::task.
inline constexpr use_task_t use_task{};

/// Receives from `rx` as an Asio asynchronous operation: completes with
/// `(std::exception_ptr, recv_result<T>)`, received or closed, or cancelled by Asio's
/// per-operation cancellation. Preconditions: `rx` lives until the completion handler ran.
template <class T, class Token>
auto async_recv(basic_receiver<T>& rx, Token&& token) {
  return ::asio::async_initiate<Token, void(std::exception_ptr, recv_result<T>)>(
      [](auto handler, basic_receiver<T>* r) {
        detail::run_bridge(
            std::move(handler),
            [r](std::stop_token stop) { return r->async_recv(std::move(stop)); },
            [](std::exception_ptr e, std::optional<recv_result<T>> v) {
              return std::make_tuple(
                  std::move(e), v ? std::move(*v) : recv_result<T>{recv_status::cancelled, {}});
            });
      },
      token, &rx);
}

/// Sends `value` into `tx` as an Asio asynchronous operation: completes with
/// `(std::exception_ptr, send_result<T>)`, sent, or closed or cancelled with the value handed
/// back. Preconditions: `tx` lives until the completion handler ran.
template <class T, class Token>
auto async_send(basic_sender<T>& tx, std::type_identity_t<T> value, Token&& token) {
  return ::asio::async_initiate<Token, void(std::exception_ptr, send_result<T>)>(
      [](auto handler, basic_sender<T>* s, T v) {
        detail::run_bridge(
            std::move(handler),
            [s, val = std::optional<T>(std::move(v))](std::stop_token stop) mutable {
              return s->async_send(std::move(*val), std::move(stop));
            },
            [](std::exception_ptr e, std::optional<send_result<T>> r) {
              return std::make_tuple(std::move(e),
                                     r ? std::move(*r) : send_result<T>{send_status::closed, {}});
            });
      },
      token, &tx, std::move(value));
}

/// spindle::select as an Asio asynchronous operation: completes with
/// `(std::exception_ptr, std::size_t)`, the index of the chosen case after its handler ran on
/// the completion handler's executor; cancellation by Asio completes with a std::system_error
/// (operation_aborted) and no case chosen. The cases and an on_send case's value must live
/// until the completion handler ran; cases made in the call, as in spindle::select, are moved
/// into the operation.
template <class Token, select_case... Cases>
requires(!select_case<Token> && sizeof...(Cases) > 0)
auto async_select(Token&& token, Cases&&... cases) {
  using case_tuple = std::tuple<std::remove_cvref_t<Cases>...>;
  return ::asio::async_initiate<Token, void(std::exception_ptr, std::size_t)>(
      [](auto handler, std::shared_ptr<case_tuple> held) {
        detail::run_bridge(
            std::move(handler),
            [held = std::move(held)](std::stop_token stop) {
              return std::apply(
                  [&stop](auto&... c) {
                    return spindle::async_select(std::move(c)...,
                                                 spindle::on_stop(std::move(stop), [] {}));
                  },
                  *held);
            },
            [](std::exception_ptr e, std::optional<std::size_t> i) {
              std::size_t chosen = i.value_or(sizeof...(Cases));
              if (!e && chosen == sizeof...(Cases)) {
                e = std::make_exception_ptr(std::system_error(
                    ::asio::error::make_error_code(::asio::error::operation_aborted),
                    "spindle::async_select: cancelled"));
              }
              return std::make_tuple(std::move(e), chosen);
            });
      },
      token, std::make_shared<case_tuple>(std::forward<Cases>(cases)...));
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE

namespace asio {

/// spindle::use_task as a completion token (see spindle/asio.hpp).
template <class R, class... Args>
class async_result<::spindle::use_task_t, R(Args...)> {
 public:
  template <class Initiation, class... InitArgs>
  static auto initiate(Initiation&& initiation, ::spindle::use_task_t /*unused*/,
                       InitArgs&&... args) {
    using args_tuple = std::tuple<std::decay_t<InitArgs>...>;
    return ::spindle::detail::task_op<std::decay_t<Initiation>, args_tuple, Args...>(
        std::forward<Initiation>(initiation), args_tuple(std::forward<InitArgs>(args)...),
        std::stop_token());
  }
};

/// spindle::use_task(stop) as a completion token.
template <class R, class... Args>
class async_result<::spindle::use_task_with_stop_t, R(Args...)> {
 public:
  template <class Initiation, class... InitArgs>
  static auto initiate(Initiation&& initiation, ::spindle::use_task_with_stop_t token,
                       InitArgs&&... args) {
    using args_tuple = std::tuple<std::decay_t<InitArgs>...>;
    return ::spindle::detail::task_op<std::decay_t<Initiation>, args_tuple, Args...>(
        std::forward<Initiation>(initiation), args_tuple(std::forward<InitArgs>(args)...),
        std::move(token.stop));
  }
};

}  // namespace asio
