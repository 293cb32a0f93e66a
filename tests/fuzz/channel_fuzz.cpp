// Fuzz target: bytes decode into a sequence of channel operations (try_send, try_recv, close,
// copying and dropping handles) on one thread, checked step by step against a sequential model
// (a FIFO with a capacity and a closed flag). Values are tracked objects: at the end every
// value was received or destroyed exactly once. The single-producer single-consumer flavour
// (bounded_spsc) takes the same operations, except that its handles are moved, never copied.
// The lanes flavour (bounded_lanes) is modelled as one FIFO per lane, each sender handle's
// lane known (the first 0, each copy the next, round robin): a send fails as full only when
// its own lane is, and a receive returns the oldest value of some lane (which lane is the
// receiver's choice), empty only when every lane is.
#include <spindle/channel.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "fuzz/byte_reader.hpp"
#include "support/tracked.hpp"

namespace {

using spindle_test::tracked;

[[noreturn]] void fail(char const* what) {
  std::fprintf(stderr, "channel_fuzz: %s\n", what);
  std::abort();
}

void expect(bool cond, char const* what) {
  if (!cond) {
    fail(what);
  }
}

void run(spindle_fuzz::byte_reader& in) {
  // 0 unbounded, 1..3 bounded(n), 4 rendezvous, 5 bounded_spsc(1), 6 bounded_spsc(3),
  // 7 bounded_lanes(1, 2), 8 bounded_lanes(2, 3)
  auto const flavour = in.next() % 9;
  bool const spsc = flavour == 5 || flavour == 6;
  bool const lanes = flavour >= 7;
  std::size_t const lane_count = flavour == 7 ? 2 : flavour == 8 ? 3 : 1;
  // The capacity of one FIFO of the model: the channel's, or one lane's.
  std::size_t const capacity = flavour == 0   ? std::numeric_limits<std::size_t>::max()
                               : flavour == 4 ? 0
                               : flavour == 5 ? 1
                               : flavour == 6 ? 3
                               : flavour == 7 ? 1
                               : flavour == 8 ? 2
                                              : flavour;
  std::vector<spindle::sender<tracked>> senders;
  std::vector<spindle::receiver<tracked>> receivers;
  // The spsc flavour's move-only handles, used instead of the vectors.
  std::optional<spindle::spsc_sender<tracked>> spsc_tx;
  std::optional<spindle::spsc_receiver<tracked>> spsc_rx;
  if (flavour == 0) {
    auto [tx, rx] = spindle::unbounded<tracked>();
    senders.push_back(std::move(tx));
    receivers.push_back(std::move(rx));
  } else if (spsc) {
    // Move-only handles: case 6 below moves them instead of copying.
    auto [tx, rx] = spindle::bounded_spsc<tracked>(capacity);
    spsc_tx.emplace(std::move(tx));
    spsc_rx.emplace(std::move(rx));
  } else if (lanes) {
    auto [tx, rx] = spindle::bounded_lanes<tracked>(capacity, lane_count);
    senders.push_back(std::move(tx));
    receivers.push_back(std::move(rx));
  } else {
    auto [tx, rx] = spindle::bounded<tracked>(capacity);
    senders.push_back(std::move(tx));
    receivers.push_back(std::move(rx));
  }
  // One FIFO per lane (one in all for every other flavour), and each sender handle's lane.
  std::vector<std::deque<std::uint64_t>> model(lane_count);
  std::vector<std::size_t> lane_of{0};
  std::size_t next_lane = 1;
  auto const buffered = [&model] {
    std::size_t n = 0;
    for (auto const& q : model) {
      n += q.size();
    }
    return n;
  };
  bool closed = false;
  std::uint64_t next_id = 0;
  for (int steps = 0; steps < 4096 && !in.done(); ++steps) {
    auto const op = in.next();
    std::size_t const which_tx = spsc ? 0 : op % senders.size();
    spindle::basic_sender<tracked>& tx =
        spsc ? static_cast<spindle::basic_sender<tracked>&>(*spsc_tx) : senders[which_tx];
    auto& lane = model[spsc ? 0 : lane_of[which_tx]];
    spindle::basic_receiver<tracked>& rx =
        spsc ? static_cast<spindle::basic_receiver<tracked>&>(*spsc_rx)
             : receivers[op % receivers.size()];
    switch ((op >> 4U) % 8) {
      case 0:
      case 1:
      case 2: {
        auto const id = next_id++;
        auto r = tx.try_send(tracked(id));
        if (closed) {
          expect(r.status == spindle::send_status::closed, "send on a closed channel");
        } else if (lane.size() >= capacity) {
          expect(r.status == spindle::send_status::full, "send beyond capacity");
        } else {
          expect(r.status == spindle::send_status::sent, "send with room failed");
          lane.push_back(id);
        }
        expect(r.status == spindle::send_status::sent || (r.value && r.value->id() == id),
               "a failed send did not hand the value back");
        break;
      }
      case 3:
      case 4:
      case 5: {
        auto r = rx.try_recv();
        if (buffered() != 0) {
          expect(r.status == spindle::recv_status::received && r.value.has_value(),
                 "recv found nothing in a channel that holds values");
          // The oldest value of the lane it came from (of the one FIFO, but for lanes).
          bool found = false;
          for (auto& q : model) {
            if (!q.empty() && q.front() == r.value->id()) {
              q.pop_front();
              found = true;
              break;
            }
          }
          expect(found, "recv did not return the oldest value of a lane");
        } else if (closed) {
          expect(r.status == spindle::recv_status::closed, "recv on closed and drained");
        } else {
          expect(r.status == spindle::recv_status::empty, "recv on an empty channel");
        }
        break;
      }
      case 6:
        if (spsc) {
          // Hand each handle to another variable and back: the channel must not notice.
          auto moved_tx = std::move(*spsc_tx);
          auto moved_rx = std::move(*spsc_rx);
          *spsc_tx = std::move(moved_tx);
          *spsc_rx = std::move(moved_rx);
        } else if (op & 1U) {
          if (senders.size() < 4) {
            senders.push_back(senders.front());
            // A copy's lane: the next in turn (bounded_lanes); 0 for every other flavour.
            lane_of.push_back(lanes ? next_lane++ % lane_count : 0);
          } else {
            senders.pop_back();
            lane_of.pop_back();
          }
        } else {
          if (receivers.size() < 4) {
            receivers.push_back(receivers.front());
          } else {
            receivers.pop_back();
          }
        }
        break;
      default:
        if (op & 1U) {
          tx.close();
        } else {
          rx.close();
        }
        closed = true;
        break;
    }
    // (tx and rx may dangle here: case 6 can resize the handle vectors.)
    spindle::basic_sender<tracked> const& first_tx =
        spsc ? static_cast<spindle::basic_sender<tracked> const&>(*spsc_tx) : senders.front();
    spindle::basic_receiver<tracked> const& first_rx =
        spsc ? static_cast<spindle::basic_receiver<tracked> const&>(*spsc_rx) : receivers.front();
    if (capacity != 0) {
      expect(first_tx.size() == buffered(), "size() disagrees with the model");
    }
    expect(first_rx.is_closed() == closed, "is_closed() disagrees with the model");
    expect(tracked::live() == static_cast<std::int64_t>(buffered()),
           "live values differ from buffered values");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  spindle_fuzz::byte_reader in(data, size);
  run(in);
  expect(tracked::live() == 0, "values leaked or destroyed twice after the handles died");
  return 0;
}
