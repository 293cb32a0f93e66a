// expect-error: task_callable
// A task is called with no arguments: spindle::task_callable rejects a callable that needs one
// (bind the argument into a lambda instead).
#include <spindle/executor.hpp>

auto main() -> int {
  spindle::executor ex{1};
  auto h = ex.spawn([](int x) { return x; });
  return h.join();
}
