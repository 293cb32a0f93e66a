// asio_echo_bench: a TCP echo server over 127.0.0.1, three ways, under the same load:
//   spindle      one io_context thread for the sockets; each connection a spindle::task on a
//                spindle::executor of `workers` workers, awaiting reads and writes with
//                spindle::use_task (<spindle/asio.hpp>);
//   asio-per-core  `workers` io_contexts, one thread each; each connection an asio::awaitable
//                on one of them (round robin), the usual way to scale Asio;
//   asio-pool    one asio::thread_pool of `workers` threads; each connection an asio::awaitable
//                on it, its socket on the pool.
// The load: `connections` clients on one io_context thread of their own, each sending a
// `size`-byte request and waiting for its echo before the next (closed loop), for `seconds`.
// Reported per server: requests per second, and the median and 99th percentile of the
// round-trip time. Rounds run the three servers one after the other, `rounds` times, so a
// disturbance on the machine touches every server alike; the summary gives each server's
// median over the rounds and its ratio to spindle.
//
// Run: asio_echo_bench [connections=64] [seconds=2] [rounds=5] [workers=hardware] [size=64]

#include <spindle/asio.hpp>
#include <spindle/executor.hpp>
#include <spindle/task.hpp>

#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace {

using asio::ip::tcp;
using clock_type = std::chrono::steady_clock;

struct settings {
  std::size_t connections = 64;
  double seconds = 2.0;
  int rounds = 5;
  std::size_t workers = std::max(1U, std::thread::hardware_concurrency());
  std::size_t size = 64;
};

struct result {
  double rps = 0;
  double p50_us = 0;
  double p99_us = 0;
};

// ---- Servers -----------------------------------------------------------------------------------

spindle::task<void> spindle_echo(tcp::socket s, std::stop_token stop) {
  std::array<char, 4096> buf{};
  try {
    for (;;) {
      std::size_t const n = co_await s.async_read_some(asio::buffer(buf), spindle::use_task(stop));
      co_await asio::async_write(s, asio::buffer(buf, n), spindle::use_task(stop));
    }
  } catch (std::system_error const&) {
  }
}

spindle::task<void> spindle_accept(tcp::acceptor& a, spindle::executor& ex, std::stop_token stop) {
  for (;;) {
    try {
      tcp::socket s = co_await a.async_accept(spindle::use_task(stop));
      s.set_option(tcp::no_delay(true));
      ex.spawn(spindle_echo(std::move(s), stop)).detach();
    } catch (std::system_error const&) {
      co_return;
    }
  }
}

asio::awaitable<void> asio_echo(tcp::socket s) {
  std::array<char, 4096> buf{};
  for (;;) {
    auto [ec, n] = co_await s.async_read_some(asio::buffer(buf),
                                              asio::experimental::as_tuple(asio::use_awaitable));
    if (ec) {
      co_return;
    }
    auto [wec, w] = co_await asio::async_write(s, asio::buffer(buf, n),
                                               asio::experimental::as_tuple(asio::use_awaitable));
    if (wec) {
      co_return;
    }
  }
}

/// A running server: its port, and how to stop it (closing every connection).
struct running {
  unsigned short port = 0;
  std::function<void()> stop;
};

auto start_spindle(std::size_t workers) -> running {
  struct state {
    explicit state(std::size_t w) : ex(w), acceptor(io, {asio::ip::address_v4::loopback(), 0}) {}
    spindle::executor ex;
    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(io);
    tcp::acceptor acceptor;
    std::stop_source stop;
    std::thread io_thread;
    spindle::join_handle<void> accepting;
  };
  auto st = std::make_shared<state>(workers);
  st->io_thread = std::thread([st = st.get()] { st->io.run(); });
  st->accepting = st->ex.spawn(spindle_accept(st->acceptor, st->ex, st->stop.get_token()));
  return {st->acceptor.local_endpoint().port(), [st] {
            st->stop.request_stop();
            st->accepting.join();
            st->ex.shutdown();
            st->work.reset();
            st->io_thread.join();
          }};
}

auto start_asio_per_core(std::size_t workers) -> running {
  struct state {
    explicit state(std::size_t w)
        : ios(w), acceptor(ios[0], {asio::ip::address_v4::loopback(), 0}) {}
    std::vector<asio::io_context> ios;
    tcp::acceptor acceptor;
    std::vector<std::thread> threads;
  };
  auto st = std::make_shared<state>(workers);
  auto accept = [](state* s) -> asio::awaitable<void> {
    for (std::size_t next = 0;; ++next) {
      auto& io = s->ios[next % s->ios.size()];
      auto [ec, sock] =
          co_await s->acceptor.async_accept(io, asio::experimental::as_tuple(asio::use_awaitable));
      if (ec) {
        co_return;
      }
      sock.set_option(tcp::no_delay(true));
      asio::co_spawn(io, asio_echo(std::move(sock)), asio::detached);
    }
  };
  asio::co_spawn(st->ios[0], accept(st.get()), asio::detached);
  for (auto& io : st->ios) {
    // Kept running while it has no connection yet; stop() ends it.
    st->threads.emplace_back([&io] {
      auto work = asio::make_work_guard(io);
      io.run();
    });
  }
  return {st->acceptor.local_endpoint().port(), [st] {
            for (auto& io : st->ios) {
              io.stop();
            }
            for (auto& t : st->threads) {
              t.join();
            }
          }};
}

auto start_asio_pool(std::size_t workers) -> running {
  struct state {
    explicit state(std::size_t w)
        : pool(w), acceptor(pool, {asio::ip::address_v4::loopback(), 0}) {}
    asio::thread_pool pool;
    tcp::acceptor acceptor;
  };
  auto st = std::make_shared<state>(workers);
  auto accept = [](state* s) -> asio::awaitable<void> {
    for (;;) {
      auto [ec, sock] =
          co_await s->acceptor.async_accept(asio::experimental::as_tuple(asio::use_awaitable));
      if (ec) {
        co_return;
      }
      sock.set_option(tcp::no_delay(true));
      asio::co_spawn(s->pool, asio_echo(std::move(sock)), asio::detached);
    }
  };
  asio::co_spawn(st->pool, accept(st.get()), asio::detached);
  return {st->acceptor.local_endpoint().port(), [st] {
            st->pool.stop();
            st->pool.join();
          }};
}

// ---- Load ------------------------------------------------------------------------------------

asio::awaitable<void> client(tcp::socket s, std::size_t size, clock_type::time_point warm,
                             clock_type::time_point end, std::vector<std::uint32_t>& rtt_ns) {
  std::vector<char> out(size, 'x');
  std::vector<char> in(size);
  for (;;) {
    auto const t0 = clock_type::now();
    if (t0 >= end) {
      break;
    }
    auto [we, wn] = co_await asio::async_write(s, asio::buffer(out),
                                               asio::experimental::as_tuple(asio::use_awaitable));
    auto [re, rn] = co_await asio::async_read(s, asio::buffer(in),
                                              asio::experimental::as_tuple(asio::use_awaitable));
    if (we || re) {
      break;
    }
    if (t0 >= warm) {
      rtt_ns.push_back(static_cast<std::uint32_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - t0).count()));
    }
  }
  s.close();
}

auto load(unsigned short port, settings const& cfg) -> result {
  asio::io_context io;
  std::vector<std::vector<std::uint32_t>> rtts(cfg.connections);
  std::vector<tcp::socket> sockets;
  for (std::size_t i = 0; i < cfg.connections; ++i) {
    sockets.emplace_back(io);
    sockets.back().connect({asio::ip::address_v4::loopback(), port});
    sockets.back().set_option(tcp::no_delay(true));
  }
  auto const warm = clock_type::now() + std::chrono::milliseconds(200);
  auto const end = warm + std::chrono::duration_cast<clock_type::duration>(
                              std::chrono::duration<double>(cfg.seconds));
  for (std::size_t i = 0; i < cfg.connections; ++i) {
    asio::co_spawn(io, client(std::move(sockets[i]), cfg.size, warm, end, rtts[i]), asio::detached);
  }
  io.run();
  std::vector<std::uint32_t> all;
  for (auto& r : rtts) {
    all.insert(all.end(), r.begin(), r.end());
  }
  result out;
  if (all.empty()) {
    return out;
  }
  std::sort(all.begin(), all.end());
  out.rps = static_cast<double>(all.size()) / cfg.seconds;
  out.p50_us = all[all.size() / 2] / 1e3;
  out.p99_us = all[std::min(all.size() - 1, all.size() * 99 / 100)] / 1e3;
  return out;
}

auto median(std::vector<double> v) -> double {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  settings cfg;
  if (argc > 1)
    cfg.connections = std::strtoul(argv[1], nullptr, 10);
  if (argc > 2)
    cfg.seconds = std::strtod(argv[2], nullptr);
  if (argc > 3)
    cfg.rounds = std::atoi(argv[3]);
  if (argc > 4)
    cfg.workers = std::strtoul(argv[4], nullptr, 10);
  if (argc > 5)
    cfg.size = std::strtoul(argv[5], nullptr, 10);
  std::printf(
      "asio_echo_bench: %zu connections, %zu-byte requests, %.1f s x %d rounds, "
      "%zu server threads (+1 I/O thread for spindle), 1 client thread\n",
      cfg.connections, cfg.size, cfg.seconds, cfg.rounds, cfg.workers);

  struct server_kind {
    char const* name;
    running (*start)(std::size_t);
    std::vector<double> rps, p50, p99;
  };
  std::vector<server_kind> kinds{{"spindle", &start_spindle, {}, {}, {}},
                                 {"asio-per-core", &start_asio_per_core, {}, {}, {}},
                                 {"asio-pool", &start_asio_pool, {}, {}, {}}};
  std::printf("| round | server | req/s | p50 us | p99 us |\n|---|---|---|---|---|\n");
  for (int round = 1; round <= cfg.rounds; ++round) {
    for (auto& k : kinds) {
      running srv = k.start(cfg.workers);
      result const r = load(srv.port, cfg);
      srv.stop();
      k.rps.push_back(r.rps);
      k.p50.push_back(r.p50_us);
      k.p99.push_back(r.p99_us);
      std::printf("| %d | %s | %.0f | %.1f | %.1f |\n", round, k.name, r.rps, r.p50_us, r.p99_us);
      std::fflush(stdout);
    }
  }
  double const base_rps = median(kinds[0].rps);
  double const base_p99 = median(kinds[0].p99);
  std::printf(
      "\nMedians over %d rounds:\n| server | req/s | p50 us | p99 us | req/s vs spindle | "
      "p99 vs spindle |\n|---|---|---|---|---|---|\n",
      cfg.rounds);
  for (auto& k : kinds) {
    double const rps = median(k.rps);
    double const p99 = median(k.p99);
    std::printf("| %s | %.0f | %.1f | %.1f | %.2f | %.2f |\n", k.name, rps, median(k.p50), p99,
                base_rps > 0 ? rps / base_rps : 0, base_p99 > 0 ? p99 / base_p99 : 0);
  }
  return 0;
}
