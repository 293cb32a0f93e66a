// expect-error: task_callable[^@]*is_object
// A task's result is stored until someone joins it, so a reference result could dangle:
// spindle::task_callable requires void or an object type.
#include <spindle/executor.hpp>

int global_value = 0;

auto main() -> int {
  spindle::executor ex{1};
  auto h = ex.spawn([]() -> int& { return global_value; });
  return h.join();
}
