// Tests for <spindle/asio.hpp>: spindle::asio_executor under Asio's own algorithms (post,
// dispatch, defer, bind_executor, co_spawn, any_io_executor), tracked work and shutdown;
// spindle::use_task (a spindle::task awaiting Asio operations, resumed on its executor, with
// errors and stop-token cancellation); and spindle's channel operations and select as Asio
// operations (async_recv, async_send, async_select) under asio::use_awaitable and callbacks,
// with Asio's per-operation cancellation. Values are spindle_test::tracked where they flow, so
// each test also checks that every value is destroyed exactly once. The connection-level tests
// (many sockets, disconnects, shutdown) are in asio_loopback_test.cpp.

#include <spindle/asio.hpp>
#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/select.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>
#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <future>
#include <latch>
#include <optional>
#include <stop_token>
#include <system_error>
#include <thread>
#include <utility>

#include "support/tracked.hpp"

namespace {

using namespace std::chrono_literals;
using spindle_test::tracked;

/// An io_context run by one thread for the test's duration.
class io_thread {
 public:
  io_thread() : guard_(asio::make_work_guard(io_)), thread_([this] { io_.run(); }) {}
  io_thread(io_thread const&) = delete;
  auto operator=(io_thread const&) -> io_thread& = delete;
  ~io_thread() {
    guard_.reset();
    thread_.join();
  }
  auto context() -> asio::io_context& { return io_; }
  [[nodiscard]] auto id() const -> std::thread::id { return thread_.get_id(); }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::thread thread_;
};

// ---- Example ---------------------------------------------------------------------------------

spindle::task<int> wait_then_answer(asio::io_context& io, spindle::executor& ex) {
  asio::steady_timer timer(io, 1ms);
  co_await timer.async_wait(spindle::use_task);  // waits on Asio, resumes on ex
  co_return ex.is_worker_thread() ? 42 : -1;
}

asio::awaitable<int> receive_on_asio(spindle::receiver<int> rx) {
  auto r = co_await spindle::async_recv(rx, asio::use_awaitable);  // waits on the channel
  co_return r ? *r.value : -1;
}

TEST(Asio, Example) {
  spindle::executor ex(2);
  io_thread io;

  // 1. The executor as an Asio executor.
  spindle::asio_executor ax(ex);
  std::promise<bool> on_worker;
  asio::post(ax, [&] { on_worker.set_value(ex.is_worker_thread()); });
  EXPECT_TRUE(on_worker.get_future().get());

  // 2. A spindle task awaiting an Asio operation.
  EXPECT_EQ(ex.spawn(wait_then_answer(io.context(), ex)).join(), 42);

  // 3. An Asio coroutine awaiting a spindle channel.
  auto [tx, rx] = spindle::bounded<int>(1);
  auto answer = asio::co_spawn(io.context(), receive_on_asio(std::move(rx)), asio::use_future);
  ASSERT_TRUE(tx.send(7));
  EXPECT_EQ(answer.get(), 7);
}

// ---- asio_executor ---------------------------------------------------------------------------

using never_executor = spindle::basic_asio_executor<true, false>;
using tracked_executor = spindle::basic_asio_executor<false, true>;

static_assert(asio::execution::is_executor<spindle::asio_executor>::value);
static_assert(asio::execution::is_executor<never_executor>::value);
static_assert(asio::execution::is_executor<tracked_executor>::value);
static_assert(std::is_nothrow_copy_constructible_v<spindle::asio_executor>);
static_assert(std::is_convertible_v<spindle::asio_executor, asio::any_io_executor>);
static_assert(
    asio::can_require<spindle::asio_executor, asio::execution::blocking_t::never_t>::value);
static_assert(asio::can_prefer<spindle::asio_executor,
                               asio::execution::outstanding_work_t::tracked_t>::value);
static_assert(std::is_same_v<decltype(asio::require(std::declval<spindle::asio_executor>(),
                                                    asio::execution::blocking.never)),
                             never_executor>);

TEST(AsioExecutor, AnswersAsioQueries) {
  spindle::executor ex(1);
  spindle::asio_executor const ax(ex);
  EXPECT_EQ(asio::query(ax, asio::execution::blocking), asio::execution::blocking.possibly);
  EXPECT_EQ(
      asio::query(asio::require(ax, asio::execution::blocking.never), asio::execution::blocking),
      asio::execution::blocking.never);
  EXPECT_EQ(asio::query(ax, asio::execution::outstanding_work),
            asio::execution::outstanding_work.untracked);
  EXPECT_EQ(asio::query(ax, asio::execution::relationship), asio::execution::relationship.fork);
  EXPECT_EQ(&asio::query(ax, asio::execution::context), &spindle::detail::shared_asio_context());
  EXPECT_EQ(&ax.spindle_executor(), &ex);
  EXPECT_FALSE(ax.running_in_this_thread());

  asio::io_context io;
  spindle::asio_executor const with_io(ex, io);
  EXPECT_EQ(&asio::query(with_io, asio::execution::context),
            static_cast<asio::execution_context*>(&io));
  EXPECT_NE(with_io, ax);
  EXPECT_EQ(ax, spindle::asio_executor(ex));
  spindle::executor other(1);
  EXPECT_NE(ax, spindle::asio_executor(other));
}

TEST(AsioExecutor, PostDispatchAndDeferRunOnWorkers) {
  spindle::executor ex(2);
  spindle::asio_executor ax(ex);
  std::atomic<int> on_workers{0};
  std::latch done(3);
  auto check = [&] {
    on_workers.fetch_add(ex.is_worker_thread() ? 1 : 0);
    done.count_down();
  };
  asio::post(ax, check);
  asio::dispatch(ax, check);  // not on a worker: queued
  asio::defer(ax, check);
  done.wait();
  EXPECT_EQ(on_workers.load(), 3);
}

TEST(AsioExecutor, DispatchOnAWorkerRunsAtOncePostDoesNot) {
  spindle::executor ex(1);
  spindle::asio_executor ax(ex);
  std::promise<std::pair<bool, bool>> result;
  asio::post(ax, [&] {
    bool dispatched = false;
    bool posted = false;
    asio::dispatch(ax, [&] { dispatched = true; });
    asio::post(ax, [&] { posted = true; });  // after this task: `posted` is read first
    result.set_value({dispatched, posted});
  });
  auto const [dispatched, posted] = result.get_future().get();
  EXPECT_TRUE(dispatched);
  EXPECT_FALSE(posted);
}

TEST(AsioExecutor, BindExecutorRunsAnIoHandlerOnAWorker) {
  spindle::executor ex(2);
  io_thread io;
  asio::steady_timer timer(io.context(), 1ms);
  std::promise<bool> on_worker;
  timer.async_wait(asio::bind_executor(spindle::asio_executor(ex), [&](asio::error_code ec) {
    on_worker.set_value(!ec && ex.is_worker_thread());
  }));
  EXPECT_TRUE(on_worker.get_future().get());
}

asio::awaitable<int> count_timer_waits(int n) {
  auto exec = co_await asio::this_coro::executor;
  int on_worker = 0;
  for (int i = 0; i < n; ++i) {
    asio::steady_timer timer(exec, 1ms);  // its services live in the executor's context
    co_await timer.async_wait(asio::use_awaitable);
    auto const* ax = exec.target<spindle::asio_executor>();
    on_worker += ax != nullptr && ax->running_in_this_thread() ? 1 : 0;
  }
  co_return on_worker;
}

TEST(AsioExecutor, CoSpawnRunsAnAwaitableOnWorkers) {
  spindle::executor ex(2);
  io_thread io;
  // The executor's context is the io_context: timers made from it use its reactor.
  spindle::asio_executor ax(ex, io.context());
  auto n = asio::co_spawn(ax, count_timer_waits(5), asio::use_future);
  EXPECT_EQ(n.get(), 5);
}

TEST(AsioExecutor, TrackedWorkKeepsShutdownWaiting) {
  auto ex = std::make_unique<spindle::executor>(2);
  spindle::asio_executor ax(*ex);
  std::optional<tracked_executor> work(asio::prefer(ax, asio::execution::outstanding_work.tracked));
  EXPECT_EQ(asio::query(*work, asio::execution::outstanding_work),
            asio::execution::outstanding_work.tracked);
  auto copy = *work;  // copies share one unit of work
  std::atomic<bool> shut_down{false};
  std::thread stopper([&] {
    ex->shutdown();
    shut_down.store(true);
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(shut_down.load());
  // The tracked executor still runs work during shutdown, from a worker.
  std::promise<bool> ran;
  asio::post(*work, [&] { ran.set_value(true); });
  EXPECT_TRUE(ran.get_future().get());
  work.reset();
  std::this_thread::sleep_for(5ms);
  EXPECT_FALSE(shut_down.load());
  { auto gone = std::move(copy); }  // the last copy lets go, from this thread
  stopper.join();
  EXPECT_TRUE(shut_down.load());
}

TEST(AsioExecutor, AfterShutdownPostAndTrackingThrow) {
  spindle::executor ex(1);
  spindle::asio_executor ax(ex);
  ex.shutdown();
  EXPECT_THROW(asio::post(ax, [] {}), std::logic_error);
  EXPECT_THROW(static_cast<void>(asio::require(ax, asio::execution::outstanding_work.tracked)),
               std::logic_error);
}

// ---- use_task ----------------------------------------------------------------------------------

spindle::task<std::pair<bool, bool>> where_resumed(asio::io_context& io, spindle::executor& ex,
                                                   std::thread::id io_id) {
  asio::steady_timer timer(io, 1ms);
  co_await timer.async_wait(spindle::use_task);
  co_return std::pair{ex.is_worker_thread(), std::this_thread::get_id() != io_id};
}

TEST(UseTask, ResumesOnTheExecutorNotTheIoThread) {
  spindle::executor ex(2);
  io_thread io;
  for (int i = 0; i < 20; ++i) {
    auto const [on_worker, not_io] = ex.spawn(where_resumed(io.context(), ex, io.id())).join();
    EXPECT_TRUE(on_worker);
    EXPECT_TRUE(not_io);
  }
}

spindle::task<std::size_t> read_after_peer_closed(asio::io_context& io) {
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::address_v4::loopback(), 0});
  asio::ip::tcp::socket client(io);
  co_await client.async_connect(acceptor.local_endpoint(), spindle::use_task);
  asio::ip::tcp::socket server = co_await acceptor.async_accept(spindle::use_task);
  co_await asio::async_write(client, asio::buffer("hello", 5), spindle::use_task);
  client.close();
  std::array<char, 5> buf{};
  std::size_t const n = co_await asio::async_read(server, asio::buffer(buf), spindle::use_task);
  // The next read finds the end of the stream, an error: thrown as std::system_error.
  co_await server.async_read_some(asio::buffer(buf), spindle::use_task);
  co_return n;
}

TEST(UseTask, AnErrorIsThrownAsSystemError) {
  spindle::executor ex(2);
  io_thread io;
  try {
    static_cast<void>(ex.spawn(read_after_peer_closed(io.context())).join());
    FAIL() << "no error";
  } catch (std::system_error const& e) {
    EXPECT_EQ(e.code(), asio::error::eof);
  }
}

spindle::task<bool> refused_as_value(asio::io_context& io) {
  asio::ip::tcp::endpoint closed;
  {
    // A port nobody listens on any more.
    asio::ip::tcp::acceptor acceptor(io, {asio::ip::address_v4::loopback(), 0});
    closed = acceptor.local_endpoint();
  }
  asio::ip::tcp::socket socket(io);
  auto [ec] =
      co_await socket.async_connect(closed, asio::experimental::as_tuple(spindle::use_task));
  co_return ec == asio::error::connection_refused;
}

TEST(UseTask, AsTupleKeepsTheErrorAsAValue) {
  spindle::executor ex(1);
  io_thread io;
  EXPECT_TRUE(ex.spawn(refused_as_value(io.context())).join());
}

spindle::task<int> wait_an_hour(asio::io_context& io, std::stop_token stop, std::latch& started) {
  asio::steady_timer timer(io, 1h);
  started.count_down();
  try {
    co_await timer.async_wait(spindle::use_task(std::move(stop)));
  } catch (std::system_error const& e) {
    co_return e.code() == asio::error::operation_aborted ? 1 : 2;
  }
  co_return 0;
}

TEST(UseTask, AStopRequestCancelsTheOperation) {
  spindle::executor ex(2);
  io_thread io;
  for (int i = 0; i < 20; ++i) {
    std::stop_source stop;
    std::latch started(1);
    auto h = ex.spawn(wait_an_hour(io.context(), stop.get_token(), started));
    started.wait();
    if (i % 2 == 0) {
      std::this_thread::sleep_for(1ms);  // usually suspended by now; else stop comes first
    }
    stop.request_stop();
    EXPECT_EQ(h.join(), 1);
  }
}

TEST(UseTask, StopRequestedBeforehandStartsNothing) {
  spindle::executor ex(1);
  io_thread io;
  std::stop_source stop;
  stop.request_stop();
  std::latch started(1);
  EXPECT_EQ(ex.spawn(wait_an_hour(io.context(), stop.get_token(), started)).join(), 1);
}

TEST(UseTask, WorksInSyncWait) {
  io_thread io;
  auto waited = [](asio::io_context& ctx) -> spindle::task<int> {
    asio::steady_timer timer(ctx, 1ms);
    co_await timer.async_wait(spindle::use_task);
    co_return 3;
  };
  EXPECT_EQ(spindle::sync_wait(waited(io.context())), 3);
}

// ---- Channel operations for Asio -------------------------------------------------------------

asio::awaitable<std::size_t> drain(spindle::receiver<tracked> rx, std::thread::id io_id,
                                   bool& always_on_io) {
  std::size_t n = 0;
  for (;;) {
    auto r = co_await spindle::async_recv(rx, asio::use_awaitable);
    always_on_io = always_on_io && std::this_thread::get_id() == io_id;
    if (!r) {
      EXPECT_TRUE(r.is_closed());
      co_return n;
    }
    EXPECT_EQ(r.value->id(), n);
    ++n;
  }
}

TEST(AsioChannel, AwaitableReceivesOnItsExecutorUntilClosed) {
  auto const live = tracked::live();
  {
    io_thread io;
    auto [tx, rx] = spindle::bounded<tracked>(4);
    bool always_on_io = true;
    auto count =
        asio::co_spawn(io.context(), drain(std::move(rx), io.id(), always_on_io), asio::use_future);
    for (std::uint64_t i = 0; i < 1000; ++i) {
      ASSERT_TRUE(tx.send(tracked(i)));
    }
    tx.close();
    EXPECT_EQ(count.get(), 1000U);
    EXPECT_TRUE(always_on_io);
  }
  EXPECT_EQ(tracked::live(), live);
}

asio::awaitable<std::size_t> fill(spindle::sender<tracked> tx, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    auto r = co_await spindle::async_send(tx, tracked(i), asio::use_awaitable);
    if (!r) {
      co_return i;
    }
  }
  co_return n;
}

TEST(AsioChannel, AwaitableSendsThroughAFullChannel) {
  auto const live = tracked::live();
  {
    io_thread io;
    auto [tx, rx] = spindle::bounded<tracked>(1);
    auto sent = asio::co_spawn(io.context(), fill(std::move(tx), 500), asio::use_future);
    std::uint64_t expect = 0;
    for (auto v : rx) {
      EXPECT_EQ(v.id(), expect++);
    }
    EXPECT_EQ(sent.get(), 500U);
    EXPECT_EQ(expect, 500U);
  }
  EXPECT_EQ(tracked::live(), live);
}

TEST(AsioChannel, CallbackCompletesOnItsBoundExecutorAndReadyAtOnceIsNotInline) {
  io_thread io;
  auto [tx, rx] = spindle::bounded<int>(2);
  ASSERT_TRUE(tx.send(5));
  std::promise<std::pair<int, bool>> got;
  bool returned = false;
  std::mutex mu;
  {
    std::lock_guard lock(mu);
    spindle::async_recv(rx, asio::bind_executor(io.context(), [&](std::exception_ptr e,
                                                                  spindle::recv_result<int> r) {
                          std::lock_guard inner(mu);
                          got.set_value({!e && r ? *r.value : -1, returned});
                        }));
    returned = true;  // the handler runs after the initiating function returned
  }
  auto const [value, after_return] = got.get_future().get();
  EXPECT_EQ(value, 5);
  EXPECT_TRUE(after_return);
}

TEST(AsioChannel, CancellationEndsAReceiveAndHandsBackASend) {
  auto const live = tracked::live();
  {
    io_thread io;
    // Named handles, not structured bindings: clang 14 cannot capture those in a lambda.
    auto full = spindle::bounded<tracked>(1);
    auto& tx = full.first;
    auto& rx = full.second;
    ASSERT_TRUE(tx.send(tracked(1)));  // full: the next send waits
    asio::cancellation_signal cancel_recv;
    asio::cancellation_signal cancel_send;
    auto empty = spindle::bounded<tracked>(1);  // empty: a receive waits
    auto& rx2 = empty.second;
    std::promise<spindle::recv_status> recv_status;
    std::promise<std::pair<spindle::send_status, std::uint64_t>> send_outcome;
    // The handlers run on the io_context's thread (bound to it), where Asio's rule has the
    // signals emitted too.
    auto on_io = [&io](auto handler) {
      return asio::bind_executor(io.context(), std::move(handler));
    };
    asio::post(io.context(), [&] {
      spindle::async_recv(
          rx2, on_io(asio::bind_cancellation_slot(
                   cancel_recv.slot(), [&](std::exception_ptr, spindle::recv_result<tracked> r) {
                     recv_status.set_value(r.status);
                   })));
      spindle::async_send(
          tx, tracked(2),
          on_io(asio::bind_cancellation_slot(
              cancel_send.slot(), [&](std::exception_ptr, spindle::send_result<tracked> r) {
                send_outcome.set_value({r.status, r.value ? r.value->id() : 0});
              })));
    });
    // Asio's rule: emit on the operation's executor.
    asio::post(io.context(), [&] {
      cancel_recv.emit(asio::cancellation_type::terminal);
      cancel_send.emit(asio::cancellation_type::terminal);
    });
    EXPECT_EQ(recv_status.get_future().get(), spindle::recv_status::cancelled);
    auto const [status, id] = send_outcome.get_future().get();
    EXPECT_EQ(status, spindle::send_status::cancelled);
    EXPECT_EQ(id, 2U);
    auto left = rx.try_recv();
    ASSERT_TRUE(left);
    EXPECT_EQ(left.value->id(), 1U);
  }
  EXPECT_EQ(tracked::live(), live);
}

asio::awaitable<std::pair<std::size_t, int>> select_on_asio(spindle::receiver<int>& a,
                                                            spindle::receiver<int>& b,
                                                            std::thread::id io_id) {
  int got = -1;
  bool handler_on_io = false;
  std::size_t const i = co_await spindle::async_select(
      asio::use_awaitable, spindle::on_recv(a, [&](std::optional<int> v) { got = v.value_or(-2); }),
      spindle::on_recv(b, [&](std::optional<int> v) {
        got = v.value_or(-2) + 100;
        handler_on_io = std::this_thread::get_id() == io_id;
      }));
  EXPECT_TRUE(i != 1 || handler_on_io);
  co_return std::pair{i, got};
}

TEST(AsioChannel, SelectChoosesTheReadyCaseAndRunsItsHandlerOnTheExecutor) {
  io_thread io;
  auto [ta, ra] = spindle::bounded<int>(1);
  auto [tb, rb] = spindle::bounded<int>(1);
  auto chosen = asio::co_spawn(io.context(), select_on_asio(ra, rb, io.id()), asio::use_future);
  std::this_thread::sleep_for(2ms);
  ASSERT_TRUE(tb.send(9));
  auto const [i, got] = chosen.get();
  EXPECT_EQ(i, 1U);
  EXPECT_EQ(got, 109);
  EXPECT_FALSE(ra.try_recv());
}

TEST(AsioChannel, CancelledSelectReportsOperationAborted) {
  io_thread io;
  auto channel = spindle::bounded<int>(1);
  auto& ta = channel.first;
  auto& ra = channel.second;
  asio::cancellation_signal cancel;
  // The handler runs on the io_context's thread (bound to it), where the signal is emitted,
  // and reads the error there: the exception object stays on one thread.
  std::promise<std::error_code> outcome;
  asio::post(io.context(), [&] {
    spindle::async_select(
        asio::bind_executor(io.context(),
                            asio::bind_cancellation_slot(cancel.slot(),
                                                         [&](std::exception_ptr e, std::size_t) {
                                                           std::error_code code;
                                                           try {
                                                             if (e) {
                                                               std::rethrow_exception(e);
                                                             }
                                                           } catch (std::system_error const& err) {
                                                             code = err.code();
                                                           }
                                                           outcome.set_value(code);
                                                         })),
        spindle::on_recv(ra, [](std::optional<int>) {}));
  });
  asio::post(io.context(), [&] { cancel.emit(asio::cancellation_type::total); });
  EXPECT_EQ(outcome.get_future().get(), asio::error::operation_aborted);
  ASSERT_TRUE(ta.send(1));  // the channel is untouched
  EXPECT_EQ(*ra.try_recv().value, 1);
}

asio::awaitable<int> recv_on_spindle(spindle::receiver<int> rx, spindle::executor& ex) {
  auto r = co_await spindle::async_recv(rx, asio::use_awaitable);
  co_return r&& ex.is_worker_thread() ? *r.value : -1;
}

TEST(AsioChannel, AnAwaitableOnTheSpindleExecutorResumesThere) {
  spindle::executor ex(2);
  auto [tx, rx] = spindle::bounded<int>(1);
  auto got = asio::co_spawn(spindle::asio_executor(ex), recv_on_spindle(std::move(rx), ex),
                            asio::use_future);
  std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(tx.send(11));
  EXPECT_EQ(got.get(), 11);
}

}  // namespace
