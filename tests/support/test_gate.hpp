#pragma once
// A latch a test holds closed while tasks wait on it (to make a hang on purpose), which opens
// exactly once: by the test's open(), or by an opens_at_exit guard declared after the
// executor, so that a failed assertion, which leaves the test early, ends it with a failure
// instead of a hang in the executor's shutdown.

#include <atomic>
#include <latch>

namespace spindle_test {

class test_gate {
 public:
  void wait() { latch_.wait(); }
  void open() {
    if (!opened_.exchange(true)) {
      latch_.count_down();
    }
  }

 private:
  std::latch latch_{1};
  std::atomic<bool> opened_{false};
};

struct opens_at_exit {
  explicit opens_at_exit(test_gate& g) : gate(g) {}
  opens_at_exit(opens_at_exit const&) = delete;
  auto operator=(opens_at_exit const&) -> opens_at_exit& = delete;
  ~opens_at_exit() { gate.open(); }

  test_gate& gate;
};

}  // namespace spindle_test
