// A fan-in server loop with spindle::select: one server thread serves several clients, each on
// a request channel of its own, and gives up at a deadline.
//
// Each client thread sends a few numbers on its request channel and waits for each reply (the
// number doubled) on its reply channel; when it is done, its request sender is destroyed,
// which closes the channel. The server selects over every request channel and the deadline,
// and stops once every channel is closed and drained, or when the deadline passes.

#include <spindle/channel.hpp>
#include <spindle/select.hpp>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

int main() {
  using namespace std::chrono_literals;
  constexpr std::size_t clients = 3;
  constexpr int requests_each = 5;

  std::vector<spindle::receiver<int>> requests;  // the server's side
  std::vector<spindle::sender<int>> replies;
  std::vector<std::jthread> threads;
  std::vector<int> client_errors(clients, 0);  // one slot per client, read after the joins

  for (std::size_t c = 0; c < clients; ++c) {
    auto req = spindle::bounded<int>(4);
    auto rep = spindle::bounded<int>(1);
    requests.push_back(std::move(req.second));
    replies.push_back(std::move(rep.first));
    threads.emplace_back(
        [c, &client_errors, tx = std::move(req.first), rx = std::move(rep.second)]() mutable {
          for (int i = 1; i <= requests_each; ++i) {
            int const question = static_cast<int>(c) * 100 + i;
            if (!tx.send(question)) {
              ++client_errors[c];  // the server is gone
              return;
            }
            auto answer = rx.recv();
            if (!answer || *answer != 2 * question) {
              ++client_errors[c];
            }
          }
        });  // tx is destroyed with the thread's callable: the server sees this channel close
  }

  // A case on a closed channel is always ready (it delivers nullopt), so a closed channel's
  // receiver is replaced by one that is never ready: a channel that stays open and empty, as
  // long as `never_tx` lives.
  auto [never_tx, never_rx] = spindle::bounded<int>(1);
  auto const deadline = std::chrono::steady_clock::now() + 5s;  // for the whole serve
  std::size_t open = clients;
  int served = 0;
  bool timed_out = false;

  while (open > 0 && !timed_out) {
    std::optional<std::size_t> closed;
    // The handler of request channel c: answer, or note that the channel is done.
    auto serve = [&](std::size_t c) {
      return [&, c](std::optional<int> question) {
        if (!question) {
          closed = c;
          return;
        }
        static_cast<void>(replies[c].send(2 * *question));
        ++served;
      };
    };
    // Exactly one case runs. Among ready channels the choice is fair (random start), so a busy
    // client cannot starve the others.
    spindle::select(spindle::on_recv(requests[0], serve(0)),
                    spindle::on_recv(requests[1], serve(1)),
                    spindle::on_recv(requests[2], serve(2)),
                    spindle::on_deadline(deadline, [&] { timed_out = true; }));
    if (closed) {
      // Swap after the select has returned, never inside a handler: the select still uses the
      // case while its handler runs.
      requests[*closed] = never_rx;
      --open;
    }
  }

  // Let go of the server's handles before joining: after a timeout a client may still wait for
  // a reply (it then sees its reply channel closed) or for room to send (it sees closed too).
  replies.clear();
  requests.clear();
  threads.clear();  // joins the clients
  int wrong_replies = 0;
  for (int e : client_errors) {
    wrong_replies += e;
  }
  std::printf("served %d requests from %zu clients%s\n", served, clients,
              timed_out ? " before the deadline passed" : "");
  return !timed_out && wrong_replies == 0 && served == static_cast<int>(clients) * requests_each
             ? 0
             : 1;
}
