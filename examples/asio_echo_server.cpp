// A TCP echo server whose connections are spindle coroutines, with I/O on Asio
// (<spindle/asio.hpp>). The sockets live on an io_context run by one thread; each connection is
// a spindle::task that co_awaits Asio's reads and writes with spindle::use_task, so it holds no
// thread while it waits and continues on a worker of the spindle executor after each one.
//
// Graceful shutdown: one std::stop_source. Its request cancels the accept and every pending
// read or write (use_task(stop): Asio's per-operation cancellation, emitted on the io_context's
// thread), each connection coroutine then ends and closes its socket, and the executor's
// shutdown waits for them all; only then is the io_context stopped.
//
//   example_asio_echo_server              serve 127.0.0.1 on an ephemeral port, run a few
//                                         clients against it, shut down (what the test runs)
//   example_asio_echo_server 7000         serve 127.0.0.1:7000 until Ctrl-C (then shut down)

#include <spindle/asio.hpp>
#include <spindle/executor.hpp>
#include <spindle/task.hpp>

#include <asio.hpp>

#include <array>
#include <atomic>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <stop_token>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace {

using asio::ip::tcp;

// A connection: echo until the peer closes or stop is requested. The socket is a parameter,
// so it lives in the coroutine's frame and closes when the coroutine ends.
spindle::task<void> echo(tcp::socket socket, std::stop_token stop) {
  std::array<char, 4096> buf{};
  try {
    for (;;) {
      std::size_t const n =
          co_await socket.async_read_some(asio::buffer(buf), spindle::use_task(stop));
      // Here, on a spindle worker: CPU work on the request would go here.
      co_await asio::async_write(socket, asio::buffer(buf, n), spindle::use_task(stop));
    }
  } catch (std::system_error const& e) {
    if (e.code() != asio::error::eof && e.code() != asio::error::operation_aborted) {
      std::fprintf(stderr, "echo: %s\n", e.what());
    }
  }
}

// Accepts until stop; each connection becomes a coroutine of its own on `ex`.
spindle::task<void> accept_loop(tcp::acceptor& acceptor, spindle::executor& ex,
                                std::stop_token stop) {
  for (;;) {
    try {
      tcp::socket socket = co_await acceptor.async_accept(spindle::use_task(stop));
      // Detached: the executor's shutdown still waits for it.
      ex.spawn(echo(std::move(socket), stop)).detach();
    } catch (std::system_error const&) {
      co_return;  // stop was requested
    }
  }
}

// The demo's clients: plain blocking Asio sockets on their own threads.
auto run_clients(tcp::endpoint server, int clients) -> bool {
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      asio::io_context io;
      tcp::socket s(io);
      s.connect(server);
      std::string const msg = "hello from client " + std::to_string(c);
      std::string back(msg.size(), '\0');
      asio::write(s, asio::buffer(msg));
      asio::read(s, asio::buffer(back));
      if (back == msg) {
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

int main(int argc, char** argv) {
  unsigned short const port = argc > 1 ? static_cast<unsigned short>(std::atoi(argv[1])) : 0;
  spindle::executor ex(2);
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  tcp::acceptor acceptor(io, {asio::ip::address_v4::loopback(), port});
  std::thread io_thread([&io] { io.run(); });
  std::stop_source stop;
  auto accepting = ex.spawn(accept_loop(acceptor, ex, stop.get_token()));
  std::printf("echo server on %s:%u\n", acceptor.local_endpoint().address().to_string().c_str(),
              static_cast<unsigned>(acceptor.local_endpoint().port()));

  bool ok = true;
  if (port == 0) {
    ok = run_clients(acceptor.local_endpoint(), 8);
    std::printf("8 clients echoed: %s\n", ok ? "yes" : "NO");
  } else {
    // Serve until Ctrl-C or SIGTERM.
    asio::signal_set signals(io, SIGINT, SIGTERM);
    std::promise<void> signalled;
    signals.async_wait([&signalled](asio::error_code, int) { signalled.set_value(); });
    signalled.get_future().wait();
  }

  // Graceful shutdown, in order: cancel, let every coroutine end, then stop the I/O thread.
  stop.request_stop();
  accepting.join();
  ex.shutdown();
  work.reset();
  io_thread.join();
  std::printf("shut down\n");
  return ok ? 0 : 1;
}
