// <spindle/asio.hpp> over real sockets (127.0.0.1, ephemeral ports): a server whose accept loop
// and connections are spindle coroutines (spindle::use_task) and whose parsed messages go
// through a bounded spindle channel to a consumer, against clients that are asio::awaitables on
// their own io_context. Checked: thousands of concurrent connections each echoing every
// message; clients that disconnect in the middle of a message; shutdown with connections open;
// and that every message the server accepted into the channel is received exactly once.

#include <spindle/asio.hpp>
#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/task.hpp>

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <future>
#include <mutex>
#include <stop_token>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "support/sizes.hpp"

namespace {

using asio::ip::tcp;
using frame = std::array<unsigned char, 8>;

auto encode(std::uint64_t id) -> frame {
  frame f{};
  std::memcpy(f.data(), &id, sizeof id);
  return f;
}
auto decode(frame const& f) -> std::uint64_t {
  std::uint64_t id = 0;
  std::memcpy(&id, f.data(), sizeof id);
  return id;
}

/// How many connections this process may hold at once, client and server ends both open:
/// `wanted`, or fewer where the descriptor limit is lower (raised to its hard limit first).
auto connections_allowed(std::size_t wanted) -> std::size_t {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    lim.rlim_cur = lim.rlim_max;
    static_cast<void>(setrlimit(RLIMIT_NOFILE, &lim));
    static_cast<void>(getrlimit(RLIMIT_NOFILE, &lim));
    auto const fit = (static_cast<std::size_t>(lim.rlim_cur) - 64) / 2;
    return std::min(wanted, fit);
  }
  return std::min<std::size_t>(wanted, 400);
}

/// The server: one io_context thread for its sockets, a two-worker spindle executor for its
/// coroutines, and a consumer thread draining the channel its connections feed.
class server {
 public:
  server() : acceptor_(io_, {asio::ip::address_v4::loopback(), 0}) {
    auto [tx, rx] = spindle::bounded<std::uint64_t>(64);
    consumer_ = std::thread([this, rx = std::move(rx)]() mutable {
      for (auto id : rx) {
        received_.push_back(id);
      }
    });
    io_thread_ = std::thread([this] { io_.run(); });
    accept_ = ex_.spawn(accept_loop(std::move(tx)));
  }
  server(server const&) = delete;
  auto operator=(server const&) -> server& = delete;
  ~server() { stop(); }

  [[nodiscard]] auto endpoint() const -> tcp::endpoint { return acceptor_.local_endpoint(); }

  /// Graceful shutdown: stop accepting, cancel every connection's pending operation, wait for
  /// the connections to end, the channel to drain and the threads to finish.
  void stop() {
    if (stopped_) {
      return;
    }
    stopped_ = true;
    stop_.request_stop();
    accept_.join();
    ex_.shutdown();    // every connection coroutine has ended
    consumer_.join();  // the last sender went with them: the channel closed and drained
    guard_.reset();
    io_thread_.join();
  }

  [[nodiscard]] auto accepted() const -> std::vector<std::uint64_t> {
    std::lock_guard lock(mu_);
    return accepted_;
  }
  /// After stop(): what the consumer received.
  [[nodiscard]] auto received() const -> std::vector<std::uint64_t> const& { return received_; }
  [[nodiscard]] auto connections() const -> std::size_t { return connections_.load(); }

 private:
  spindle::task<void> accept_loop(spindle::sender<std::uint64_t> out) {
    for (;;) {
      try {
        tcp::socket s = co_await acceptor_.async_accept(spindle::use_task(stop_.get_token()));
        connections_.fetch_add(1);
        ex_.spawn(connection(std::move(s), out)).detach();
      } catch (std::system_error const&) {
        co_return;  // stopped
      }
    }
  }

  spindle::task<void> connection(tcp::socket s, spindle::sender<std::uint64_t> out) {
    auto const stop = stop_.get_token();
    frame f{};
    try {
      for (;;) {
        co_await asio::async_read(s, asio::buffer(f), spindle::use_task(stop));
        std::uint64_t const id = decode(f);
        // Parsed on a worker; accepted once the channel takes it.
        if (auto r = co_await out.async_send(id); !r) {
          co_return;
        }
        {
          std::lock_guard lock(mu_);
          accepted_.push_back(id);
        }
        co_await asio::async_write(s, asio::buffer(f), spindle::use_task(stop));
      }
    } catch (std::system_error const&) {
      // The peer left (possibly in the middle of a frame, which was not accepted), or stop.
    }
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_ = asio::make_work_guard(io_);
  tcp::acceptor acceptor_;
  spindle::executor ex_{2};
  std::stop_source stop_;
  std::thread io_thread_;
  std::thread consumer_;
  spindle::join_handle<void> accept_;
  bool stopped_ = false;
  mutable std::mutex mu_;
  std::vector<std::uint64_t> accepted_;
  std::vector<std::uint64_t> received_;
  std::atomic<std::size_t> connections_{0};
};

struct client_outcome {
  std::atomic<std::size_t> echoed{0};
  std::atomic<std::size_t> mismatched{0};
  std::atomic<std::size_t> ended_by_server{0};
};

/// Sends `count` frames with ids from `first`, reading each echo. A client with `drop_midway`
/// sends half of one more frame and disconnects.
asio::awaitable<void> client(tcp::socket s, std::uint64_t first, std::size_t count,
                             bool drop_midway, client_outcome& out) {
  try {
    for (std::uint64_t id = first; id < first + count; ++id) {
      frame f = encode(id);
      co_await asio::async_write(s, asio::buffer(f), asio::use_awaitable);
      frame back{};
      co_await asio::async_read(s, asio::buffer(back), asio::use_awaitable);
      (decode(back) == id ? out.echoed : out.mismatched).fetch_add(1);
    }
    if (drop_midway) {
      frame f = encode(first + count);
      co_await asio::async_write(s, asio::buffer(f.data(), 4), asio::use_awaitable);
      s.close();
    }
  } catch (std::system_error const&) {
    out.mismatched.fetch_add(1);
  }
}

/// Connects `n` sockets one after the other (a listen backlog need not hold them all), then
/// runs `run(socket, i)` for each, all at once.
template <class Run>
asio::awaitable<void> connect_all(tcp::endpoint to, std::size_t n, Run run) {
  auto exec = co_await asio::this_coro::executor;
  for (std::size_t i = 0; i < n; ++i) {
    tcp::socket s(exec);
    co_await s.async_connect(to, asio::use_awaitable);
    asio::co_spawn(exec, run(std::move(s), i), asio::detached);
  }
}

// Under ThreadSanitizer a quarter of the connections (500): it runs the I/O paths 5 to 20 times
// slower, and the test must stay well under a minute on a 2-core machine.
constexpr std::size_t scale = spindle_test::tsan_divisor(std::size_t{4});

TEST(AsioLoopback, ThousandsOfConnectionsEachMessageEchoedAndAcceptedOnce) {
  std::size_t const n = connections_allowed(2000 / scale);
  std::size_t const per_client = 4;
  server srv;
  client_outcome out;
  {
    asio::io_context io;
    asio::co_spawn(io,
                   connect_all(srv.endpoint(), n,
                               [&](tcp::socket s, std::size_t i) {
                                 // Every tenth client disconnects in the middle of a frame.
                                 return client(std::move(s), i * 100, per_client, i % 10 == 3, out);
                               }),
                   asio::detached);
    io.run();  // returns when every client is done
  }
  EXPECT_EQ(out.mismatched.load(), 0U);
  EXPECT_EQ(out.echoed.load(), n * per_client);
  srv.stop();
  EXPECT_EQ(srv.connections(), n);
  auto accepted = srv.accepted();
  auto received = srv.received();
  std::sort(accepted.begin(), accepted.end());
  std::sort(received.begin(), received.end());
  EXPECT_EQ(std::adjacent_find(received.begin(), received.end()), received.end()) << "a duplicate";
  EXPECT_EQ(received, accepted);
  EXPECT_EQ(received.size(), n * per_client);  // half frames were never accepted
}

asio::awaitable<void> idle_client(tcp::socket s, std::uint64_t id, client_outcome& out,
                                  std::atomic<std::size_t>& ready) {
  frame f = encode(id);
  co_await asio::async_write(s, asio::buffer(f), asio::use_awaitable);
  frame back{};
  co_await asio::async_read(s, asio::buffer(back), asio::use_awaitable);
  out.echoed.fetch_add(decode(back) == id ? 1 : 0);
  ready.fetch_add(1);
  // Stays connected until the server goes: the read ends with eof (or a reset).
  auto [ec, bytes] = co_await s.async_read_some(asio::buffer(back),
                                                asio::experimental::as_tuple(asio::use_awaitable));
  if (ec && bytes == 0) {
    out.ended_by_server.fetch_add(1);
  }
}

TEST(AsioLoopback, ShutdownWithConnectionsOpenEndsEveryConnection) {
  std::size_t const n = connections_allowed(400 / scale);
  server srv;
  client_outcome out;
  std::atomic<std::size_t> ready{0};
  asio::io_context io;
  asio::co_spawn(io,
                 connect_all(srv.endpoint(), n,
                             [&](tcp::socket s, std::size_t i) {
                               return idle_client(std::move(s), i, out, ready);
                             }),
                 asio::detached);
  std::thread clients([&io] { io.run(); });
  while (ready.load() < n) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  srv.stop();  // every connection is open and waiting for its next frame
  clients.join();
  EXPECT_EQ(out.echoed.load(), n);
  EXPECT_EQ(out.ended_by_server.load(), n);
  auto received = srv.received();
  std::sort(received.begin(), received.end());
  std::vector<std::uint64_t> expected(n);
  for (std::size_t i = 0; i < n; ++i) {
    expected[i] = i;
  }
  EXPECT_EQ(received, expected);
}

}  // namespace
