// spindle::detail::basic_injector under the model checker, with blocks of two task pointers so
// that a handful of tasks cross block boundaries and recycle the spare block: a pusher against
// two poppers, and a push racing close(). Every task pushed is taken exactly once, and what the
// pusher wrote before push() is visible to the popper (the race detector checks the payloads
// and the slots, which the queue marks with note_read/note_write).
#include <spindle/detail/executor/injector.hpp>
#include <spindle/detail/executor/task.hpp>
#include <spindle/model/atomic.hpp>
#include <spindle/model/track_allocations.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <vector>

#include "model/support.hpp"
#include "support/model_cases.hpp"

namespace model = spindle::model;
using spindle::detail::task;
using spindle_test::budget;
using spindle_test::explore_and_report;
using spindle_test::tso;
using small_injector = spindle::detail::basic_injector<2>;

namespace {

void no_op(task* /*unused*/) noexcept {}

/// A task with a payload its pusher writes before the push.
struct item {
  task t{&no_op};
  model::plain<int> payload;
};

/// Room for the largest scenario's tasks.
constexpr std::size_t max_items = 5;

struct items {
  std::array<item, max_items> all;

  /// Writes item i's payload and pushes it.
  auto push(small_injector& q, std::size_t i) -> bool {
    all[i].payload.set(static_cast<int>(i) + 1);
    return q.push(&all[i].t);
  }

  /// Records a popped task after reading its payload (a race if the push did not publish it).
  void take(std::vector<std::size_t>& into, task* t) {
    for (std::size_t i = 0; i < max_items; ++i) {
      if (&all[i].t == t) {
        model::check(all[i].payload.get() == static_cast<int>(i) + 1, "payload not visible");
        into.push_back(i);
        return;
      }
    }
    model::check(false, "popped a task that was never pushed");
  }
};

/// Each of `n` indices appears exactly once across `lists`.
void each_once(std::initializer_list<std::vector<std::size_t> const*> lists, std::size_t n) {
  std::vector<int> seen(n, 0);
  for (auto const* l : lists) {
    for (std::size_t i : *l) {
      ++seen[i];
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    model::check(seen[i] == 1, "a task was taken twice or never");
  }
}

/// The main thread pushes five tasks (three blocks of two) while two poppers take batches of
/// up to two, twice each; the main thread then drains what is left.
void push_against_two_poppers() {
  constexpr std::size_t n = max_items;
  small_injector q;
  items it;
  std::vector<std::size_t> a;
  std::vector<std::size_t> b;
  std::vector<std::size_t> rest;
  auto popper = [&](std::vector<std::size_t>& into) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      // The sink receives the batch's later tasks before pop_batch returns its first one.
      std::array<task*, 2> later{};
      std::size_t n_later = 0;
      task* const first =
          q.pop_batch(2, 2, [&](task* more) noexcept { later[n_later++ % 2] = more; });
      if (first != nullptr) {
        it.take(into, first);
        for (std::size_t k = 0; k < n_later; ++k) {
          it.take(into, later[k]);
        }
      }
    }
  };
  model::thread p1([&] { popper(a); });
  model::thread p2([&] { popper(b); });
  for (std::size_t i = 0; i < n; ++i) {
    model::check(it.push(q, i), "push refused before close");
  }
  p1.join();
  p2.join();
  while (task* t = q.pop()) {
    it.take(rest, t);
  }
  model::check(q.looks_empty(), "drained queue does not look empty");
  each_once({&a, &b, &rest}, n);
  // One pusher: a popper's own tasks come out oldest first.
  for (auto const* l : {&a, &b, &rest}) {
    for (std::size_t k = 1; k < l->size(); ++k) {
      model::check((*l)[k - 1] < (*l)[k], "tasks of one pusher taken out of order");
    }
  }
}

/// A push races close(): either it was accepted and is popped afterwards, or it was refused
/// and nothing of it is queued.
void push_against_close() {
  small_injector q;
  items it;
  std::vector<std::size_t> got;
  model::check(it.push(q, 0), "push refused before close");
  model::check(it.push(q, 1), "push refused before close");
  model::plain<int> accepted;
  model::thread pusher([&] { accepted.set(it.push(q, 2) ? 1 : 0); });
  q.close();
  pusher.join();
  while (task* t = q.pop()) {
    it.take(got, t);
  }
  model::check(got.size() == 2 + static_cast<std::size_t>(accepted.get()),
               "an accepted push was lost or a refused one queued");
  model::check(!it.push(q, 2), "push accepted after close");
}

}  // namespace

TEST(ModelInjector, Example) {
  // Five tasks through blocks of two, against two poppers, within two preemptions.
  explore_and_report("injector push vs 2 poppers, dfs bound 2", model::exhaustive(2, budget(20000)),
                     push_against_two_poppers);
}

TEST(ModelInjector, PushAgainstTwoPoppersRandomAndTso) {
  explore_and_report("injector push vs 2 poppers, pct d=3",
                     model::pct_schedules(101, budget(2000), 3), push_against_two_poppers);
  spindle_test::explore_tso_then_weak("injector push vs 2 poppers, pct d=3, TSO",
                                      model::pct_schedules(102, budget(2000), 3),
                                      push_against_two_poppers);
}

TEST(ModelInjector, PushAgainstClose) {
  explore_and_report("injector push vs close, dfs bound 3", model::exhaustive(3, budget(20000)),
                     push_against_close);
}
