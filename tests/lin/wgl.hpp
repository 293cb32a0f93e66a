#pragma once
// A linearizability checker for recorded histories: the Wing-Gong search with Lowe's
// memoisation (Wing & Gong, "Testing and Verifying Concurrent Objects", JPDC 1993; Lowe,
// "Testing for Linearizability", CCPE 2017), and P-compositionality by object (Herlihy & Wing's
// locality: a history is linearizable iff each object's sub-history is; porcupine applies the
// same partitioning, anishathalye/porcupine checker.go).
//
// A history is a list of operations with invoke/response timestamps taken from one shared
// counter (so "a responded before b was invoked" is a real-time order) and the result each
// observed. The search linearizes a minimal pending call at a time, applies it to a sequential
// specification, and backtracks when a response comes before its call could be placed; a
// (set of linearized calls, state) pair already explored is not explored again.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace spindle_lin {

enum class op_kind : std::uint8_t { send, recv, push, pop, steal };
enum class outcome : std::uint8_t { ok, full, empty, retry, closed };

struct operation {
  int object = 0;
  op_kind kind = op_kind::send;
  std::int64_t arg = 0;  // the value sent or pushed
  outcome result = outcome::ok;
  std::int64_t value = 0;  // the value received, popped or stolen when result == ok
  std::uint64_t call = 0;
  std::uint64_t ret = 0;
};

/// A source of timestamps shared by every thread of one history.
class clock {
 public:
  auto now() noexcept -> std::uint64_t { return t_.fetch_add(1, std::memory_order_seq_cst); }

 private:
  std::atomic<std::uint64_t> t_{0};
};

/// The sequential specification of a FIFO queue with a capacity (channels): send/recv.
struct fifo_spec {
  std::size_t capacity;
  using state = std::deque<std::int64_t>;

  [[nodiscard]] auto apply(state& s, operation const& op) const -> bool {
    switch (op.kind) {
      case op_kind::send:
        if (op.result == outcome::full) {
          return s.size() >= capacity;
        }
        if (op.result != outcome::ok || s.size() >= capacity) {
          return false;
        }
        s.push_back(op.arg);
        return true;
      case op_kind::recv:
        if (op.result == outcome::empty) {
          return s.empty();
        }
        if (op.result != outcome::ok || s.empty() || s.front() != op.value) {
          return false;
        }
        s.pop_front();
        return true;
      default:
        return false;
    }
  }
};

/// The sequential specification of a work-stealing deque: the owner pushes at the back and
/// pops at the back (lifo) or front (fifo); thieves steal at the front. A steal may report
/// `retry` (it lost a race) without changing anything.
struct deque_spec {
  bool lifo = true;
  using state = std::deque<std::int64_t>;

  [[nodiscard]] auto apply(state& s, operation const& op) const -> bool {
    switch (op.kind) {
      case op_kind::push:
        s.push_back(op.arg);
        return true;
      case op_kind::pop:
        if (op.result == outcome::empty) {
          return s.empty();
        }
        if (s.empty()) {
          return false;
        }
        if (lifo) {
          if (s.back() != op.value) {
            return false;
          }
          s.pop_back();
        } else {
          if (s.front() != op.value) {
            return false;
          }
          s.pop_front();
        }
        return true;
      case op_kind::steal:
        if (op.result == outcome::retry) {
          return true;
        }
        if (op.result == outcome::empty) {
          return s.empty();
        }
        if (s.empty() || s.front() != op.value) {
          return false;
        }
        s.pop_front();
        return true;
      default:
        return false;
    }
  }
};

/// True when the operations (all on one object) have a linearization under `spec`.
template <class Spec>
auto linearizable_single(std::vector<operation> const& ops, Spec const& spec) -> bool {
  std::size_t const n = ops.size();
  if (n == 0) {
    return true;
  }
  if (n > 64) {
    return false;  // the memo uses a 64-bit set; histories here are far smaller
  }
  // Entries: 2i is the call of op i, 2i+1 its response; sorted by time, in a linked list.
  struct entry {
    std::uint64_t time;
    std::size_t op;
    bool is_call;
  };
  std::vector<entry> entries;
  for (std::size_t i = 0; i < n; ++i) {
    entries.push_back({ops[i].call, i, true});
    entries.push_back({ops[i].ret, i, false});
  }
  std::sort(entries.begin(), entries.end(),
            [](entry const& a, entry const& b) { return a.time < b.time; });
  std::size_t const m = entries.size();
  std::vector<std::size_t> prev(m + 1);
  std::vector<std::size_t> next(m + 1);
  std::vector<std::size_t> ret_of(n);
  std::size_t const head = m;  // sentinel
  for (std::size_t i = 0; i < m; ++i) {
    prev[i] = i == 0 ? head : i - 1;
    next[i] = i + 1 == m ? head : i + 1;
    if (!entries[i].is_call) {
      ret_of[entries[i].op] = i;
    }
  }
  next[head] = 0;
  prev[head] = m - 1;
  auto unlink = [&](std::size_t e) {
    next[prev[e]] = next[e];
    prev[next[e]] = prev[e];
  };
  auto relink = [&](std::size_t e) {
    next[prev[e]] = e;
    prev[next[e]] = e;
  };

  typename Spec::state state{};
  std::uint64_t linearized = 0;
  std::set<std::pair<std::uint64_t, typename Spec::state>> seen;
  struct frame {
    std::size_t call_entry;
    typename Spec::state before;
  };
  std::vector<frame> stack;
  std::size_t e = next[head];
  while (next[head] != head) {
    if (e == head) {
      return false;  // cannot happen: a response always ends the scan
    }
    if (entries[e].is_call) {
      auto const op = entries[e].op;
      auto trial = state;
      if (spec.apply(trial, ops[op])) {
        auto const bits = linearized | (std::uint64_t{1} << op);
        if (seen.emplace(bits, trial).second) {
          stack.push_back({e, state});
          state = std::move(trial);
          linearized = bits;
          unlink(e);
          unlink(ret_of[op]);
          e = next[head];
          continue;
        }
      }
      e = next[e];
    } else {
      // A response whose call is not linearized yet: undo the last choice.
      if (stack.empty()) {
        return false;
      }
      auto f = std::move(stack.back());
      stack.pop_back();
      auto const op = entries[f.call_entry].op;
      state = std::move(f.before);
      linearized &= ~(std::uint64_t{1} << op);
      relink(ret_of[op]);
      relink(f.call_entry);
      e = next[f.call_entry];
    }
  }
  return true;
}

/// True when every object's sub-history is linearizable (locality).
template <class SpecFor>
auto linearizable(std::vector<operation> const& history, SpecFor spec_for) -> bool {
  std::set<int> objects;
  for (auto const& op : history) {
    objects.insert(op.object);
  }
  for (int object : objects) {
    std::vector<operation> part;
    for (auto const& op : history) {
      if (op.object == object) {
        part.push_back(op);
      }
    }
    if (!linearizable_single(part, spec_for(object))) {
      return false;
    }
  }
  return true;
}

/// True when two operations of the history overlap in time (the history is concurrent, not
/// just a sequence).
inline auto has_overlap(std::vector<operation> const& history) -> bool {
  for (std::size_t i = 0; i < history.size(); ++i) {
    for (std::size_t j = i + 1; j < history.size(); ++j) {
      if (history[i].call < history[j].ret && history[j].call < history[i].ret) {
        return true;
      }
    }
  }
  return false;
}

inline auto describe(std::vector<operation> const& history) -> std::string {
  static char const* const kinds[] = {"send", "recv", "push", "pop", "steal"};
  static char const* const results[] = {"ok", "full", "empty", "retry", "closed"};
  std::string out;
  for (auto const& op : history) {
    out += "  obj" + std::to_string(op.object) + " " + kinds[static_cast<int>(op.kind)] + "(" +
           std::to_string(op.arg) + ") -> " + results[static_cast<int>(op.result)] + " " +
           std::to_string(op.value) + " [" + std::to_string(op.call) + ", " +
           std::to_string(op.ret) + "]\n";
  }
  return out;
}

}  // namespace spindle_lin
