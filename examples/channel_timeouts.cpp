// Timeouts, cancellation and rendezvous with spindle channels: a request/reply hand-shake over
// a rendezvous channel, a receive that gives up after a deadline, and a blocked receive that a
// std::stop_source cancels from another thread.

#include <spindle/channel.hpp>

#include <chrono>
#include <cstdio>
#include <stop_token>
#include <thread>

int main() {
  using namespace std::chrono_literals;
  int failures = 0;

  // Rendezvous: bounded(0) buffers nothing; send returns once the server has the request.
  {
    auto [requests_tx, requests_rx] = spindle::bounded<int>(0);
    auto [replies_tx, replies_rx] = spindle::bounded<int>(1);
    std::jthread server([rx = std::move(requests_rx), tx = std::move(replies_tx)]() mutable {
      for (int request : rx) {
        static_cast<void>(tx.send(request * 2));
      }
    });
    for (int i = 1; i <= 3; ++i) {
      static_cast<void>(requests_tx.send(i));
      auto reply = replies_rx.recv();
      failures += (reply && *reply == 2 * i) ? 0 : 1;
    }
    requests_tx.close();  // the server's range-for ends
  }

  // A deadline: nothing arrives within 10 ms.
  {
    auto [tx, rx] = spindle::bounded<int>(4);
    auto r = rx.recv_for(10ms);
    failures += r.status == spindle::recv_status::timed_out ? 0 : 1;
    // A send that cannot get room in time hands its value back.
    for (int i = 0; i < 4; ++i) {
      static_cast<void>(tx.try_send(i));
    }
    auto s = tx.send_for(99, 1ms);
    failures += (s.status == spindle::send_status::timed_out && *s.value == 99) ? 0 : 1;
  }

  // Cancellation: a std::jthread's stop request wakes its blocked receive.
  {
    auto [tx, rx] = spindle::unbounded<int>();
    spindle::recv_status status = spindle::recv_status::empty;
    {
      std::jthread listener([&status, rx = rx](std::stop_token stop) mutable {
        status = rx.recv(stop).status;  // cancelled when the jthread is asked to stop
      });
    }  // ~jthread requests stop, then joins
    failures += status == spindle::recv_status::cancelled ? 0 : 1;
  }

  std::printf("%s\n", failures == 0 ? "all good" : "something went wrong");
  return failures == 0 ? 0 : 1;
}
