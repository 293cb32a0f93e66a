// A pipeline server: I/O on Asio, CPU work on spindle (<spindle/asio.hpp>).
//
//   accept, read lines   asio::awaitable coroutines on an io_context (one thread)
//        |  spindle::async_send(requests, ..., asio::use_awaitable)     bounded: backpressure
//        v
//   parse and compute    spindle::task coroutines on the spindle executor's workers
//        |  co_await reply.async_send(...)                              bounded, one per connection
//        v
//   write replies        asio::awaitable, spindle::async_recv(replies, asio::use_awaitable)
//
// Each request line is a list of integers; the reply is their sum. A connection's reader puts
// its requests into the shared bounded channel (it waits there, holding no thread, when the
// workers are behind); the workers answer into the connection's own bounded reply channel, from
// which its writer writes back, in the order the workers finish them. Every request carries a
// sender of that reply channel, so the reply channel closes once the reader has ended and every one
// of its requests was answered: the writer then ends, and the connection closes with nothing lost.
//
// Graceful shutdown: stop accepting (the acceptor is closed on the io_context's thread), let
// every connection finish, close the request channel so the workers drain it and end, then
// shut down the executor and stop the io_context. The demo's clients send lines and check the
// sums; the example then shuts down and exits (the test runs it so).

#include <spindle/asio.hpp>
#include <spindle/channel.hpp>
#include <spindle/executor.hpp>
#include <spindle/task.hpp>

#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/experimental/awaitable_operators.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace {

using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

struct request {
  std::string line;
  spindle::sender<std::string> reply;  // the connection's reply channel
};

// A worker stage: parse and compute on a spindle worker, answer into the request's channel.
spindle::task<void> worker(spindle::receiver<request> requests) {
  while (auto r = co_await requests.async_recv()) {
    std::istringstream in(r->line);
    std::int64_t sum = 0;
    for (std::int64_t v = 0; in >> v;) {
      sum += v;
    }
    static_cast<void>(co_await r->reply.async_send(std::to_string(sum) + "\n"));
  }
}

asio::awaitable<void> writer(tcp::socket& socket, spindle::receiver<std::string> replies) {
  for (;;) {
    auto r = co_await spindle::async_recv(replies, asio::use_awaitable);
    if (!r) {
      co_return;  // the reader ended and every request was answered
    }
    co_await asio::async_write(socket, asio::buffer(*r.value), asio::use_awaitable);
  }
}

// Reads request lines until the client has sent everything. It owns the connection's copy of the
// reply sender: when it ends, only the requests still in flight hold the reply channel open.
asio::awaitable<void> reader(tcp::socket& socket, spindle::sender<request> requests,
                             spindle::sender<std::string> reply) {
  asio::streambuf buf;
  for (;;) {
    auto [ec, n] = co_await asio::async_read_until(
        socket, buf, '\n', asio::experimental::as_tuple(asio::use_awaitable));
    if (ec) {
      co_return;  // eof: the client has sent everything
    }
    std::string line(asio::buffers_begin(buf.data()),
                     asio::buffers_begin(buf.data()) + static_cast<std::ptrdiff_t>(n));
    buf.consume(n);
    // A named value, not a temporary in the co_await expression: g++ 12 miscompiles an
    // aggregate temporary there (its string would point into the old frame).
    request r{std::move(line), reply};
    // Waits, holding no thread, while the workers are behind.
    auto sent = co_await spindle::async_send(requests, std::move(r), asio::use_awaitable);
    if (!sent) {
      co_return;  // shutting down: the request channel is closed
    }
  }
}

asio::awaitable<void> connection(tcp::socket socket, spindle::sender<request> requests) {
  auto [reply_tx, reply_rx] = spindle::bounded<std::string>(16);
  // Both halves at once, on this io_context thread (Asio allows one read and one write in
  // flight on a socket); the connection ends when both have.
  co_await (reader(socket, std::move(requests), std::move(reply_tx)) &&
            writer(socket, std::move(reply_rx)));
}

asio::awaitable<void> accept_loop(tcp::acceptor& acceptor, spindle::sender<request> requests,
                                  std::atomic<int>& open) {
  for (;;) {
    auto [ec, socket] =
        co_await acceptor.async_accept(asio::experimental::as_tuple(asio::use_awaitable));
    if (ec) {
      co_return;  // closed: shutting down
    }
    open.fetch_add(1);
    asio::co_spawn(acceptor.get_executor(), connection(std::move(socket), requests),
                   [&open](std::exception_ptr) { open.fetch_sub(1); });
  }
}

auto run_clients(tcp::endpoint server, int clients, int lines) -> bool {
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      asio::io_context io;
      tcp::socket s(io);
      s.connect(server);
      std::string out;
      std::vector<std::int64_t> expected;
      for (int i = 0; i < lines; ++i) {
        out += std::to_string(c) + " " + std::to_string(i) + " 1\n";
        expected.push_back(c + i + 1);
      }
      asio::write(s, asio::buffer(out));
      s.shutdown(tcp::socket::shutdown_send);
      std::string back;
      asio::error_code ec;
      asio::read(s, asio::dynamic_buffer(back), ec);  // until the server closes
      // Replies come in the order the workers finish them, not always the requests' order.
      std::vector<std::int64_t> sums;
      std::istringstream in(back);
      for (std::int64_t v = 0; in >> v;) {
        sums.push_back(v);
      }
      std::sort(sums.begin(), sums.end());
      if (sums == expected) {
        ok.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  return ok.load() == clients;
}

}  // namespace

int main() {
  spindle::executor ex(2);
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  tcp::acceptor acceptor(io, {asio::ip::address_v4::loopback(), 0});
  std::thread io_thread([&io] { io.run(); });

  auto [requests_tx, requests_rx] = spindle::bounded<request>(64);
  std::vector<spindle::join_handle<void>> workers;
  for (int i = 0; i < 4; ++i) {
    workers.push_back(ex.spawn(worker(requests_rx)));
  }
  std::atomic<int> open{0};
  asio::co_spawn(io, accept_loop(acceptor, requests_tx, open), asio::detached);

  bool const ok = run_clients(acceptor.local_endpoint(), 8, 100);
  std::printf("8 clients x 100 lines summed: %s\n", ok ? "yes" : "NO");

  // Graceful shutdown: stop accepting, let the connections finish, drain the workers.
  asio::post(io, [&acceptor] { acceptor.close(); });
  while (open.load() != 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  requests_tx.close();
  for (auto& w : workers) {
    w.join();
  }
  ex.shutdown();
  work.reset();
  io_thread.join();
  std::printf("shut down\n");
  return ok ? 0 : 1;
}
