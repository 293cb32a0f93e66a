// SPDX-License-Identifier: BSL-1.0
#pragma once
// spindle's channel operations and select as Asio asynchronous operations (spindle/asio.hpp:
// async_recv, async_send and async_select with any Asio completion token).
//
// Such an operation is run by a *bridge*: a small coroutine started by the operation's
// initiation, which co_awaits the channel's own awaiter (detail/coro/channel_awaiters.hpp) and
// then invokes the completion handler. The bridge's resume target is an `asio_target`, which
// resumes it by posting to the completion handler's associated executor (for asio::awaitable,
// the awaitable's executor), so a channel wait holds no thread, sits in the channel's wait list
// like any coroutine, and the bridge continues on the handler's executor, where it invokes the
// handler directly. When the channel operation completes at once (the bridge never suspends)
// the bridge is still inside the initiating function, where Asio forbids invoking the handler:
// it posts the handler to the same executor instead.
//
// Asio's rules for an asynchronous operation, and how the bridge keeps them:
//   - outstanding work: the bridge holds `outstanding_work.tracked` on the handler's executor
//     until it completes (an io_context's run() does not return meanwhile, a spindle executor's
//     shutdown waits);
//   - per-operation cancellation: when the handler's associated cancellation slot is connected,
//     any cancellation type emitted there requests stop on a std::stop_source of the bridge,
//     whose token the channel operation takes (a stop case: recv_result / send_result
//     `cancelled`, the value handed back, or the select's stop case). The slot is cleared before
//     the handler runs. Asio emits on the handler's executor, where the bridge also completes.
//   - the bridge's frame holds the handler and is freed as the handler is invoked (the frame
//     ends right after), so nothing of the operation outlives its completion.
//
// Lifetime: as for an Asio I/O object, the channel handle passed in (and an on_send case's
// value) must live until the handler has been invoked.

#include <spindle/detail/coro/resume.hpp>
#include <spindle/detail/sync/config.hpp>

#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/cancellation_type.hpp>
#include <asio/execution/outstanding_work.hpp>
#include <asio/post.hpp>
#include <asio/prefer.hpp>
#include <asio/system_executor.hpp>

#include <coroutine>
#include <exception>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// A resume target over an Asio executor: a resumption is a function posted to it.
template <class Executor>
class asio_target final : public resume_target {
 public:
  explicit asio_target(Executor ex) noexcept : ex_(std::move(ex)) {}

  void bind() noexcept override {}
  void unbind() noexcept override {}
  void resume(resume_node& node) noexcept override {
    // Read by the resumed bridge, after the post below, which orders it.
    resumed_ = true;
    try {
      ::asio::post(ex_, [n = &node] { n->run(n); });
    } catch (...) {
      // Nothing could be queued (std::bad_alloc): continue here rather than never.
      node.run(&node);
    }
  }
  void submit(resume_node& node) override { resume(node); }

  [[nodiscard]] auto executor() const noexcept -> Executor const& { return ex_; }
  /// Whether the bridge was resumed through this target (it then runs on the executor).
  [[nodiscard]] auto resumed() const noexcept -> bool { return resumed_; }

 private:
  Executor ex_;
  bool resumed_ = false;
};

/// The coroutine type of a bridge: starts at once, frees its frame when it ends.
struct bridge {
  struct promise_type : promise_base {
    auto get_return_object() const noexcept -> bridge { return {}; }
    auto initial_suspend() const noexcept -> std::suspend_never { return {}; }
    auto final_suspend() const noexcept -> std::suspend_never { return {}; }
    void return_void() const noexcept {}
    // The body catches what the channel operation throws and hands it to the handler; what
    // escapes is the handler's own exception, which Asio's rules give nowhere else to go.
    void unhandled_exception() const noexcept { std::terminate(); }
  };
};

/// `co_await enter_target{&t}`: makes `t` the resume target of the awaiting bridge, without
/// suspending.
struct enter_target {
  resume_target* target;

  [[nodiscard]] auto await_ready() const noexcept -> bool { return false; }
  template <class Promise>
  auto await_suspend(std::coroutine_handle<Promise> h) const noexcept -> bool {
    h.promise().where = target;
    return false;
  }
  void await_resume() const noexcept {}
};

/// The cancellation handler a bridge installs in the completion handler's slot.
struct stop_on_cancel {
  std::stop_source* source;
  void operator()(::asio::cancellation_type type) const noexcept {
    if (type != ::asio::cancellation_type::none) {
      source->request_stop();
    }
  }
};

/// Runs `op(stop_token)`, an awaitable channel operation, for `handler`; `finish(error, value)`
/// maps its outcome (an exception it threw, or its value) to the handler's arguments as a
/// tuple. See the file comment.
template <class Handler, class Op, class Finish>
auto run_bridge(Handler handler, Op op, Finish finish) -> bridge {
  using executor_type = ::asio::associated_executor_t<Handler, ::asio::system_executor>;
  asio_target<executor_type> target(
      ::asio::get_associated_executor(handler, ::asio::system_executor()));
  auto const work = ::asio::prefer(target.executor(), ::asio::execution::outstanding_work.tracked);
  auto slot = ::asio::get_associated_cancellation_slot(handler);
  std::optional<std::stop_source> source;
  if (slot.is_connected()) {
    source.emplace();
    slot.template emplace<stop_on_cancel>(stop_on_cancel{&*source});
  }
  co_await enter_target{&target};

  std::exception_ptr error;
  std::optional<decltype(std::declval<Op&>()(std::stop_token()).await_resume())> value;
  // A named local: g++ 12 destroys a temporary of a conditional expression in a co_await
  // operand twice.
  std::stop_token token;
  if (source) {
    token = source->get_token();
  }
  try {
    value.emplace(co_await op(std::move(token)));
  } catch (...) {
    error = std::current_exception();
  }
  if (slot.is_connected()) {
    slot.clear();
  }
  auto args = finish(std::move(error), std::move(value));
  if (target.resumed()) {
    // On the handler's executor, outside the initiating function.
    std::apply(std::move(handler), std::move(args));
  } else {
    ::asio::post(target.executor(), [h = std::move(handler), a = std::move(args)]() mutable {
      std::apply(std::move(h), std::move(a));
    });
  }
  static_cast<void>(work);
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
